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

// out[i] = 2 * in[i], with in[i] = seed + i.
labkit::Problem doubling_lab() {
    labkit::Problem p;
    p.name = "doubling";
    p.cases = {{"small", {{"n", 4}}}};
    p.outputs = {{"out", labkit::DType::f32, labkit::Tolerance{0, 0, 0}, false}};
    p.bytes_moved = [](const labkit::CaseSpec& c) { return 8.0 * static_cast<double>(c.param("n")); };
    p.flops = [](const labkit::CaseSpec&) { return 0.0; };
    p.make_inputs = [](const labkit::CaseSpec& c, std::uint64_t seed) {
        auto in = labkit::HostArray::make<float>("in", {static_cast<std::uint64_t>(c.param("n"))});
        for (std::size_t i = 0; i < in.size(); ++i) in.as<float>()[i] = static_cast<float>(seed + i);
        return std::vector<labkit::HostArray>{std::move(in)};
    };
    p.reference = [](const labkit::CaseSpec&, const std::vector<labkit::HostArray>& inputs) {
        const auto in = inputs[0].as<float>();
        labkit::Expected e{"out", {in.size()}, {}, {}};
        for (float v : in) e.values.push_back(2.0 * v);
        return std::vector<labkit::Expected>{e};
    };
    return p;
}

struct Scratch {
    fs::path dir = fs::temp_directory_path() / "labkit_test_checker";
    Scratch() {
        fs::remove_all(dir);
        fs::create_directories(dir / "dump");
    }
    ~Scratch() { fs::remove_all(dir); }

    int check(std::uint64_t seed, const labkit::Problem& lab = doubling_lab()) {
        const std::string s = std::to_string(seed), d = (dir / "dump").string(), v = (dir / "v.json").string();
        std::vector<std::string> args{"checker", "--seed", s, "--dump", d, "--verdict", v};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        return labkit::checker_main(static_cast<int>(argv.size()), argv.data(), lab);
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
    s.dump({20, 22, 24, 26});  // seed 10
    CHECK(s.check(10) == labkit::kExitPassed);
    CHECK(s.verdict().find("\"all_passed\": true") != std::string::npos);
    CHECK(s.check(11) == labkit::kExitFailed);
}

TEST_CASE("test_checker_names_the_first_wrong_element") {
    Scratch s;
    s.dump({20, 22, 0, 26});
    CHECK(s.check(10) == labkit::kExitFailed);
    CHECK(s.verdict().find("out[2] is wrong: expected 24, got 0") != std::string::npos);
}

TEST_CASE("test_checker_reports_missing_and_malformed_dumps") {
    Scratch s;
    CHECK(s.check(10) == labkit::kExitFailed);
    CHECK(s.verdict().find("\"status\": \"missing\"") != std::string::npos);
    std::ofstream(s.dir / "dump" / "small.out.bin") << "not an array";
    CHECK(s.check(10) == labkit::kExitFailed);
    CHECK(s.verdict().find("\"status\": \"malformed\"") != std::string::npos);
    s.dump({20, 22, 24});  // wrong size
    CHECK(s.check(10) == labkit::kExitFailed);
    CHECK(s.verdict().find("wrong size") != std::string::npos);
}

TEST_CASE("test_checker_judges_an_undumped_case_without_its_reference") {
    Scratch s;
    static int references = 0;
    auto lab = doubling_lab();
    const auto reference = lab.reference;
    lab.reference = [reference](const labkit::CaseSpec& c, const std::vector<labkit::HostArray>& in) {
        ++references;
        return reference(c, in);
    };
    CHECK(s.check(10, lab) == labkit::kExitFailed);
    CHECK(references == 0);
    CHECK(s.verdict().find("no output was dumped for case small") != std::string::npos);
    s.dump({20, 22, 24, 26});
    CHECK(s.check(10, lab) == labkit::kExitPassed);
    CHECK(references == 1);
}

TEST_CASE("test_report_check_case_and_json") {
    const auto lab = doubling_lab();
    const auto inputs = lab.make_inputs(lab.cases[0], 1);
    auto got = labkit::HostArray::make<float>("out", {4});
    for (int i = 0; i < 4; ++i) got.as<float>()[i] = 2.0f * static_cast<float>(1 + i);
    const auto report = labkit::check_case(lab, lab.cases[0], lab.reference(lab.cases[0], inputs), {got});
    CHECK(report.status == "passed");
    const auto json = labkit::to_json(report, lab.cases[0]);
    CHECK(json["params"]["n"] == 4);
    CHECK(json["outputs"][0]["mismatches"] == 0);
}
