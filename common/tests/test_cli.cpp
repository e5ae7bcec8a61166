// Tests of labkit/cli.hpp: the options of lab binaries and checkers, and the sentences
// bad command lines get.
#include <doctest/doctest.h>

#include "labkit/cli.hpp"

using labkit::UsageError;

namespace {
std::string usage_message(const std::vector<std::string>& args, bool checker = false) {
    try {
        if (checker)
            labkit::parse_checker_options(args);
        else
            labkit::parse_harness_options(args);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}
}  // namespace

TEST_CASE("test_cli_harness_defaults_and_options") {
    const auto d = labkit::parse_harness_options({});
    CHECK(d.seed == 1);
    CHECK_FALSE(d.bench);
    const auto o = labkit::parse_harness_options(
        {"--case", "n_1", "--case=n_31", "--seed", "18446744073709551615", "--dump", "out", "--json", "r.json"});
    CHECK(o.cases == std::vector<std::string>{"n_1", "n_31"});
    CHECK(o.seed == 18446744073709551615ull);
    CHECK(o.dump_dir == "out");
    const auto b = labkit::parse_harness_options({"--bench-case", "n_2p24", "--samples", "10", "--warmup", "0"});
    CHECK(b.bench);
    CHECK(b.samples == 10);
    CHECK(b.warmup == 0);
    CHECK(d.baselines);
    CHECK_FALSE(labkit::parse_harness_options({"--bench", "--no-baselines"}).baselines);
    const auto p = labkit::parse_harness_options({"--paced", "--bench-case", "n_2p26", "--control-in", "3",
                                                  "--control-out", "4", "--arena", "5", "--arena-bytes", "2097152"});
    CHECK(p.paced);
    CHECK(p.bench);
    CHECK_FALSE(p.baselines);  // the grader times the student's code alone
    CHECK(p.control_in == 3);
    CHECK(p.control_out == 4);
    CHECK(p.arena_fd == 5);
    CHECK(p.arena_bytes == 2097152);
    const auto a = labkit::parse_harness_options({"--audit", "--bench-case", "n_2p26", "--control", "3", "--dump", "d",
                                                  "--slots", "4"});
    CHECK(a.audit);
    CHECK(a.control == 3);
    CHECK(a.slots == 4);
    CHECK(a.dump_dir == "d");
}

TEST_CASE("test_cli_harness_rejects_bad_input_with_a_sentence") {
    CHECK(usage_message({"--frobnicate"}).find("unknown option '--frobnicate'") != std::string::npos);
    CHECK(usage_message({"--seed"}).find("needs a value") != std::string::npos);
    CHECK(usage_message({"--seed", "-3"}).find("whole number") != std::string::npos);
    CHECK(usage_message({"--seed", "12abc"}).find("'12abc'") != std::string::npos);
    CHECK(usage_message({"--samples", "0"}).find("at least 1") != std::string::npos);
    CHECK(usage_message({"--bench", "--case", "n_1"}).find("--bench-case") != std::string::npos);
    // Paced timing is the grader's protocol: it needs everything the grader gives it.
    CHECK(usage_message({"--paced", "--bench-case", "n"}).find("--arena FD") != std::string::npos);
    CHECK(usage_message({"--control-in", "3"}).find("belong to --paced") != std::string::npos);
    CHECK(usage_message({"--audit", "--bench-case", "n"}).find("--control FD") != std::string::npos);
    CHECK(usage_message({"--slots", "3"}).find("belong to --audit") != std::string::npos);
    CHECK(usage_message({"--audit", "--paced"}).find("give one") != std::string::npos);
}

TEST_CASE("test_cli_checker_requires_seed_dump_and_verdict") {
    CHECK(usage_message({}, true).find("--seed") != std::string::npos);
    CHECK(usage_message({"--seed", "1"}, true).find("--dump") != std::string::npos);
    CHECK(usage_message({"--seed", "1", "--dump", "d"}, true).find("--verdict") != std::string::npos);
    const auto o = labkit::parse_checker_options({"--seed", "5", "--dump", "d", "--verdict", "v.json",
                                                  "--bench-case", "big"});
    CHECK(o.seed == 5);
    CHECK(o.bench_cases == std::vector<std::string>{"big"});
    // The options of a grader that once held timed samples to hashes are gone: unknown now.
    CHECK(usage_message({"--seed", "1", "--dump", "d", "--verdict", "v", "--expect-hash", "c=00"}, true)
              .find("unknown option '--expect-hash'") != std::string::npos);
}
