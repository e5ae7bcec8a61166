// Tests of labkit/report.hpp and labkit/checker.hpp on a tiny made-up lab: the checker
// regenerates inputs, compares dumps, and says "missing" or "malformed" in words.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "labkit/binary_io.hpp"
#include "labkit/checker.hpp"
#include "labkit/exit_codes.hpp"
#include "labkit/output_hash.hpp"
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

// A timed sample's outputs are checked against the hash the program reported when the
// sample ended: right values dumped later, under another hash, do not pass.
TEST_CASE("test_checker_holds_a_timed_sample_to_its_reported_hash") {
    Scratch s;
    const auto right = doubled(10);
    s.dump(right);
    const labkit::Hash128 key{12345, 67890};
    const std::string key_hex = labkit::to_hex(key);
    const std::string reported = labkit::to_hex(labkit::hash_bytes_on_host(right.data(), right.size() * sizeof(float), key));
    CHECK(s.check(10, doubling_reference, {"--case", "small", "--hash-key", key_hex, "--expect-hash", "out=" + reported}) ==
          labkit::kExitPassed);
    auto other = right;
    other[0] = 0.0f;  // what the program reported was something else
    const std::string forged = labkit::to_hex(labkit::hash_bytes_on_host(other.data(), other.size() * sizeof(float), key));
    CHECK(s.check(10, doubling_reference, {"--case", "small", "--hash-key", key_hex, "--expect-hash", "out=" + forged}) ==
          labkit::kExitFailed);
    CHECK(s.verdict().find("\"status\": \"inconsistent\"") != std::string::npos);
    CHECK(s.verdict().find("changed afterwards") != std::string::npos);
    // Malformed hash options are usage errors, not verdicts.
    CHECK(s.check(10, doubling_reference, {"--case", "small", "--hash-key", "xyz", "--expect-hash", "out=" + reported}) ==
          labkit::kExitUsage);
    CHECK(s.check(10, doubling_reference, {"--hash-key", key_hex, "--expect-hash", "nosuch=" + reported}) ==
          labkit::kExitUsage);
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
