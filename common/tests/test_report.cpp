// Tests of labkit/report.hpp and labkit/checker.hpp on a tiny made-up lab: the checker
// regenerates inputs, compares dumps, and says "missing" or "malformed" in words.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "labkit/binary_io.hpp"
#include "labkit/checker.hpp"
#include "labkit/exit_codes.hpp"
#include "labkit/report.hpp"

namespace fs = std::filesystem;

namespace {

// out[i] = 2 * in[i], with in uniform in [0, 8).
labkit::Problem doubling_lab() {
    labkit::Problem p;
    p.name = "doubling";
    p.cases = {{"small", {{"n", 4}}}};
    p.outputs = {{"out", labkit::DType::f32, labkit::Tolerance{0, 0, 0}, false}};
    p.bytes_moved = [](const labkit::CaseSpec& c) { return 8.0 * static_cast<double>(c.param("n")); };
    p.flops = [](const labkit::CaseSpec&) { return 0.0; };
    p.inputs = [](const labkit::CaseSpec& c) {
        return std::vector<labkit::InputSpec>{{"in", labkit::DType::f32, {static_cast<std::uint64_t>(c.param("n"))},
                                               labkit::Fill::uniform_float(0, 0.0f, 8.0f)}};
    };
    return p;
}

std::vector<labkit::Expected> doubling_reference(const labkit::CaseSpec&, const std::vector<labkit::HostArray>& inputs) {
    const auto in = inputs[0].as<float>();
    labkit::Expected e{"out", {in.size()}, {}, {}};
    for (float v : in) e.values.push_back(2.0 * v);
    return {e};
}

// The right output of the doubling lab's case for a seed.
std::vector<float> doubled(std::uint64_t seed) {
    const auto lab = doubling_lab();
    const auto inputs = labkit::make_host_inputs(lab, lab.cases[0], seed);
    std::vector<float> out;
    for (float v : inputs[0].as<float>()) out.push_back(2.0f * v);
    return out;
}

struct Scratch {
    fs::path dir = fs::temp_directory_path() / "labkit_test_checker";
    Scratch() {
        fs::remove_all(dir);
        fs::create_directories(dir / "dump");
    }
    ~Scratch() { fs::remove_all(dir); }

    int check(std::uint64_t seed, const labkit::Reference& reference = doubling_reference,
              std::vector<std::string> extra = {}) {
        const std::string s = std::to_string(seed), d = (dir / "dump").string(), v = (dir / "v.json").string();
        std::vector<std::string> args{"checker", "--seed", s, "--dump", d, "--verdict", v};
        args.insert(args.end(), extra.begin(), extra.end());
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        return labkit::checker_main(static_cast<int>(argv.size()), argv.data(), doubling_lab(), reference);
    }
    std::string verdict() const {
        std::ifstream in(dir / "v.json");
        return std::string(std::istreambuf_iterator<char>(in), {});
    }
    void dump(std::vector<float> values) const {
        auto a = labkit::HostArray::make<float>("out", {values.size()});
        std::copy(values.begin(), values.end(), a.as<float>().begin());
        labkit::write_array(dir / "dump" / "small.out.bin", a);
    }
};

}  // namespace

TEST_CASE("test_checker_accepts_right_outputs_and_only_for_their_seed") {
    Scratch s;
    s.dump(doubled(10));
    CHECK(s.check(10) == labkit::kExitPassed);
    CHECK(s.verdict().find("\"all_passed\": true") != std::string::npos);
    CHECK(s.check(11) == labkit::kExitFailed);
}

TEST_CASE("test_checker_names_the_first_wrong_element") {
    Scratch s;
    auto out = doubled(10);
    const float right = out[2];
    out[2] = -1.0f;
    s.dump(out);
    CHECK(s.check(10) == labkit::kExitFailed);
    CHECK(s.verdict().find("out[2] is wrong: expected " + labkit::format_value(right) + ", got -1") !=
          std::string::npos);
}

TEST_CASE("test_checker_reports_missing_and_malformed_dumps") {
    Scratch s;
    CHECK(s.check(10) == labkit::kExitFailed);
    CHECK(s.verdict().find("\"status\": \"missing\"") != std::string::npos);
    std::ofstream(s.dir / "dump" / "small.out.bin") << "not an array";
    CHECK(s.check(10) == labkit::kExitFailed);
    CHECK(s.verdict().find("\"status\": \"malformed\"") != std::string::npos);
    s.dump({20, 22, 24});  // three of four elements
    CHECK(s.check(10) == labkit::kExitFailed);
    CHECK(s.verdict().find("wrong size") != std::string::npos);
}

TEST_CASE("test_checker_judges_an_undumped_case_without_its_reference") {
    Scratch s;
    static int references = 0;
    const labkit::Reference counting = [](const labkit::CaseSpec& c, const std::vector<labkit::HostArray>& in) {
        ++references;
        return doubling_reference(c, in);
    };
    CHECK(s.check(10, counting) == labkit::kExitFailed);
    CHECK(references == 0);
    CHECK(s.verdict().find("no output was dumped for case small") != std::string::npos);
    s.dump(doubled(10));
    CHECK(s.check(10, counting) == labkit::kExitPassed);
    CHECK(references == 1);
}

TEST_CASE("test_report_check_case_and_json") {
    const auto lab = doubling_lab();
    const auto inputs = labkit::make_host_inputs(lab, lab.cases[0], 1);
    auto got = labkit::HostArray::make<float>("out", {4});
    for (int i = 0; i < 4; ++i) got.as<float>()[i] = 2.0f * inputs[0].as<float>()[static_cast<std::size_t>(i)];
    const auto report = labkit::check_case(lab, lab.cases[0], doubling_reference(lab.cases[0], inputs), {got});
    CHECK(report.status == "passed");
    const auto json = labkit::to_json(report, lab.cases[0]);
    CHECK(json["params"]["n"] == 4);
    CHECK(json["outputs"][0]["mismatches"] == 0);
}

namespace {

labkit::HostArray sums(float value) {
    auto a = labkit::HostArray::make<float>("sum", {1});
    a.as<float>()[0] = value;
    return a;
}

labkit::Expected bound_of(double exact, double allowed) {
    return labkit::Expected{"sum", {1}, {exact}, {allowed}};
}

labkit::CaseReport report_of(const std::string& status, const std::string& message) {
    return labkit::CaseReport{"n_67108867", status, message, {}};
}

}  // namespace

TEST_CASE("test_report_runs_that_agree_bit_for_bit_say_nothing_more") {
    const auto r = labkit::worse_of_two_runs(report_of("passed", "all outputs match"),
                                             report_of("passed", "all outputs match"), {sums(2.5f)}, {sums(2.5f)},
                                             {bound_of(2.5, 1.0)});
    CHECK(r.status == "passed");
    CHECK_FALSE(r.changes_between_runs);
    CHECK(r.message == "all outputs match");
}

TEST_CASE("test_report_an_answer_that_changes_between_runs_is_judged_on_the_worse_run_and_said_so") {
    SUBCASE("the second run fails: its failure is the verdict") {
        const auto r = labkit::worse_of_two_runs(report_of("passed", "all outputs match"),
                                                 report_of("failed", "sum[0] is wrong: off by 276"),
                                                 {sums(33551948.0f)}, {sums(33552224.0f)}, {bound_of(33551948.1, 198)});
        CHECK(r.status == "failed");
        CHECK(r.changes_between_runs);
        CHECK(r.message.find("The answer changes from run to run: the same inputs gave sum[0] = 33551948 on the "
                             "first run and 33552224 on the second") == 0);
        CHECK(r.message.find("the case is judged on the worse run") != std::string::npos);
        CHECK(r.message.find("sum[0] is wrong: off by 276") != std::string::npos);
    }
    SUBCASE("both pass, and their spread too: passed, and said") {
        const auto r = labkit::worse_of_two_runs(report_of("passed", "all outputs match"),
                                                 report_of("passed", "all outputs match"), {sums(1.0f)},
                                                 {sums(1.0000001f)}, {bound_of(1.0, 0.01)});
        CHECK(r.status == "passed");
        CHECK(r.changes_between_runs);
        CHECK(r.message.find("Both runs, and their spread, are within the bound.") != std::string::npos);
    }
    SUBCASE("both pass on their own, but not with their spread: failed, whatever run came out well") {
        const auto r = labkit::worse_of_two_runs(report_of("passed", "all outputs match"),
                                                 report_of("passed", "all outputs match"), {sums(33552100.0f)},
                                                 {sums(33551952.0f)}, {bound_of(33551948.0, 198)});
        CHECK(r.status == "failed");
        CHECK(r.message.find("At sum[0] the runs are off by 152 and 4 and differ by 148, so a run can be off by "
                             "about 300") != std::string::npos);
        CHECK(r.message.find("more than the 198 a tree of additions stays within here") != std::string::npos);
    }
    SUBCASE("the first run fails: it stays the verdict") {
        const auto r = labkit::worse_of_two_runs(report_of("failed", "first"), report_of("passed", "ok"),
                                                 {sums(1.0f)}, {sums(2.0f)}, {bound_of(1.0, 0.5)});
        CHECK(r.status == "failed");
        CHECK(r.message.find("first") != std::string::npos);
    }
}

TEST_CASE("test_report_an_answer_that_moves_where_a_chain_could_exceed_the_bound_fails_even_when_both_runs_pass") {
    labkit::Expected e{"sum", {1}, {33551611.6}, {197.98}, {532639.56},
                       "a long chain rounds more (up to {near} here): combine partial sums as a tree. If your code "
                       "already does, look for an element counted twice.", true};
    const auto r = labkit::worse_of_two_runs(report_of("passed", "all outputs match"),
                                             report_of("passed", "all outputs match"), {sums(33551700.0f)},
                                             {sums(33551680.0f)}, {e});
    CHECK(r.status == "failed");
    CHECK(r.changes_between_runs);
    CHECK(r.message.find("At sum[0] the two runs differ by 20") != std::string::npos);
    CHECK(r.message.find("such a chain can be off by up to 532639.56, beyond the 197.98 a tree of additions stays "
                         "within, so this case fails whatever one run gives. Instead combine partial sums as a "
                         "tree.") != std::string::npos);
    CHECK(r.message.find("If your code already does") == std::string::npos);
    // Where no chain could leave the bound (a small case), a small spread is only reported.
    labkit::Expected small{"sum", {1}, {10.0}, {0.01}, {0.01}, "x: combine."};
    const auto ok = labkit::worse_of_two_runs(report_of("passed", "all outputs match"),
                                              report_of("passed", "all outputs match"), {sums(10.0f)},
                                              {sums(10.000001f)}, {small});
    CHECK(ok.status == "passed");
    CHECK(ok.changes_between_runs);
    // Where the contract itself lets the order follow timing (a scan's look-back), only the
    // spread counts.
    e.fixed_order = false;
    const auto look_back = labkit::worse_of_two_runs(report_of("passed", "all outputs match"),
                                                     report_of("passed", "all outputs match"), {sums(33551700.0f)},
                                                     {sums(33551680.0f)}, {e});
    CHECK(look_back.status == "passed");
}

TEST_CASE("test_report_second_runs_have_their_own_dump_files") {
    const labkit::CaseSpec spec{"n_1", {{"n", 1}}};
    CHECK(labkit::dump_path("d", spec, "sum").filename() == "n_1.sum.bin");
    CHECK(labkit::dump_path("d", spec, "sum", 2).filename() == "n_1.sum.run2.bin");
    CHECK_FALSE(labkit::first_bitwise_difference(sums(-0.0f), sums(-0.0f)));
    CHECK(labkit::first_bitwise_difference(sums(0.0f), sums(-0.0f)) == 0u);  // equal values, different bits
}

TEST_CASE("test_report_json_carries_the_root_mean_square_test_where_there_is_one") {
    labkit::Expected e = bound_of(1.0, 1.0);
    const auto plain = labkit::to_json(labkit::compare_within_tolerance(e, sums(1.5f), {}));
    CHECK_FALSE(plain.contains("rms_error"));
    e.rms_limit = 0.25;
    const auto over = labkit::to_json(labkit::compare_within_tolerance(e, sums(1.5f), {}));
    REQUIRE(over.contains("rms_error"));
    CHECK(over["status"] == "failed");
    CHECK(over["mismatches"] == 0);
    CHECK(over["rms_error"]["measured"] == 0.5);
    CHECK(over["rms_error"]["limit"] == 0.25);
    CHECK(over["rms_error"]["failed"] == true);
    // One element: named, and its error is the root mean square.
    CHECK(over["message"] == "sum[0] is within its own bound, but its error is 0.5 of the allowed difference, more "
                             "than the 0.25 a correct answer stays within");
}
