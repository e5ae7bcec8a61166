// Command-line options of the lab binaries and checkers. Small on purpose: a handful of
// flags, each with a help line; anything unknown or malformed is a UsageError whose
// message says what was wrong and what to type instead.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace labkit {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct HarnessOptions {
    std::vector<std::string> cases;        // --case NAME (repeatable); empty: all
    bool bench = false;                    // --bench
    std::vector<std::string> bench_cases;  // --bench-case NAME (repeatable); empty: all
    int samples = 30;                      // --samples K
    int warmup = 5;                        // --warmup W
    std::uint64_t seed = 1;                // --seed S
    std::string dump_dir;                  // --dump DIR
    std::string json_path;                 // --json FILE
    bool quiet = false;                    // --quiet
    bool baselines = true;                 // cleared by --no-baselines
    // --paced: the grader times the program through its auditor (docs/architecture.md,
    // "Paced timing"): one --bench-case, laid out in the auditor's shared memory (--arena FD,
    // --arena-bytes N), answering 'go N' on --control-in with 'done N MS' on --control-out.
    bool paced = false;
    int control_in = -1;                   // --control-in FD
    int control_out = -1;                  // --control-out FD
    int arena_fd = -1;                     // --arena FD
    int signal_fd = -1;                    // --signal FD: the page shared with the auditor (optional)
    std::uint64_t arena_bytes = 0;         // --arena-bytes N
    // --audit: the grader's auditor (labkit/audit.hpp) for one --bench-case, on the Unix
    // socket --control FD, keeping up to --slots K sealed samples, dumped under --dump DIR.
    bool audit = false;
    int control = -1;                      // --control FD
    int slots = 2;                         // --slots K
    bool slots_given = false;
    bool list_cases = false;               // --list-cases
    // --block WxH: the thread-block shape the lab's API is asked to launch with (labs whose
    // API takes one); 0 x 0 leaves the choice to the implementation.
    unsigned block_x = 0;
    unsigned block_y = 0;
    bool help = false;                     // --help
};

struct CheckerOptions {
    std::uint64_t seed = 0;                // --seed S (required)
    std::string dump_dir;                  // --dump DIR (required)
    std::string verdict_path;              // --verdict FILE (required)
    std::vector<std::string> cases;        // --case NAME (repeatable); empty: all
    std::vector<std::string> bench_cases;  // --bench-case NAME (repeatable)
    // --images DIR: write every 2-D 8-bit input and output of each checked case (the
    // reference's and the dumped one) as a PGM under DIR/<case>/, for people to look at.
    std::string images_dir;
    bool help = false;
};

HarnessOptions parse_harness_options(const std::vector<std::string>& args);
CheckerOptions parse_checker_options(const std::vector<std::string>& args);

std::string harness_usage(const std::string& program);
std::string checker_usage(const std::string& program);

// "WxH" as a thread-block shape: W, H >= 1, W * H a multiple of 32 (whole warps) and at
// most 1024. A UsageError that says so otherwise.
std::pair<unsigned, unsigned> parse_block_shape(const std::string& text, const std::string& option);

// Strict parsers: the whole text must be the number.
std::uint64_t parse_u64(const std::string& text, const std::string& option);
int parse_positive_int(const std::string& text, const std::string& option, int min_value);

}  // namespace labkit
