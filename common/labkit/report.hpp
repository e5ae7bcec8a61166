// Checking one case's outputs against its reference, and the JSON both the harness and
// the checker write (schemas cudalab.run/1 and cudalab.verdict/1, docs/architecture.md).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "labkit/compare.hpp"
#include "labkit/problem.hpp"

namespace labkit {

using Json = nlohmann::ordered_json;

inline constexpr const char* kRunSchema = "cudalab.run/1";
inline constexpr const char* kVerdictSchema = "cudalab.verdict/1";

struct CaseReport {
    std::string name;
    std::string status;  // passed | failed | missing | malformed
    std::string message;
    std::vector<CompareReport> outputs;
    bool changes_between_runs = false;  // a float case's two runs gave different bits
};

// Compares each Expected with the output of the same name.
CaseReport check_case(const Problem& problem, const CaseSpec& spec, const std::vector<Expected>& expected,
                      const std::vector<HostArray>& got);

Json params_json(const CaseSpec& spec);
Json to_json(const CompareReport& report);
Json to_json(const CaseReport& report, const CaseSpec& spec);

// The file one output of one case is dumped to and checked from: DIR/<case>.<output>.bin.
// Run 1 is <case>.<output>.bin; a repeated run k of a float case (the harness runs each
// twice, to catch answers that change from run to run) is <case>.<output>.run<k>.bin.
std::filesystem::path dump_path(const std::string& dump_dir, const CaseSpec& spec, const std::string& output,
                                int run = 1);

// The first element where two dumps of one output differ bit for bit, if any.
std::optional<std::uint64_t> first_bitwise_difference(const HostArray& a, const HostArray& b);

// A case's verdict from both runs of a float case: the worse of the two reports (a
// failure over a pass, else the first). When the two outputs differ bit for bit, the
// verdict says the answer changes from run to run (and why that matters). Where the lab
// fixes the order of additions (`expected`'s fixed_order) and a chain in timing order
// could go beyond the bound (near_miss_abs above allowed_abs: a sum large enough for
// atomicAdd of block sums to round more than a tree), the case fails, whatever this pair
// of runs gave; elsewhere the spread between the
// runs counts against each element's bound (the next run may land that much further
// off). Either way the verdict does not depend on which runs happened to come out well.
CaseReport worse_of_two_runs(const CaseReport& first, const CaseReport& second,
                             const std::vector<HostArray>& got_first, const std::vector<HostArray>& got_second,
                             const std::vector<Expected>& expected);

// Writes JSON to a file, pretty-printed; throws std::runtime_error on failure.
void write_json_file(const std::string& path, const Json& json);

}  // namespace labkit
