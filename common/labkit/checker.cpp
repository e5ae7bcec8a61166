#include "labkit/checker.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "labkit/binary_io.hpp"
#include "labkit/cli.hpp"
#include "labkit/exit_codes.hpp"
#include "labkit/report.hpp"

namespace labkit {
namespace {

namespace fs = std::filesystem;

// Whether the dump holds any of the lab's outputs for this case.
bool any_output_dumped(const Problem& problem, const CaseSpec& spec, const std::string& dump_dir) {
    return std::any_of(problem.outputs.begin(), problem.outputs.end(),
                       [&](const OutputSpec& out) { return fs::exists(dump_path(dump_dir, spec, out.name)); });
}

// Reads the dumped outputs of one run of a case into `got`; a report when they cannot be
// judged (missing or malformed).
std::optional<CaseReport> read_run(const Problem& problem, const CaseSpec& spec, const std::vector<Expected>& expected,
                                   const CheckerOptions& options, int run, std::vector<HostArray>& got) {
    for (const auto& e : expected) {
        const OutputSpec& out = problem.output(e.name);
        const fs::path path = dump_path(options.dump_dir, spec, out.name, run);
        if (!fs::exists(path))
            return CaseReport{spec.name, "missing",
                              "no output " + out.name + " was dumped for case " + spec.name +
                                  (run > 1 ? " on its second run" : "") +
                                  " (the program stopped before this case, or never wrote " +
                                  path.filename().string() + ")",
                              {}};
        try {
            HostArray array = read_array(path);
            if (array.dtype != out.dtype)
                return CaseReport{spec.name, "malformed",
                                  path.filename().string() + " holds " + std::string(dtype_name(array.dtype)) +
                                      " but output " + out.name + " is " + std::string(dtype_name(out.dtype)),
                                  {}};
            array.name = out.name;
            got.push_back(std::move(array));
        } catch (const FormatError& e) {
            return CaseReport{spec.name, "malformed", e.what(), {}};
        }
    }
    return std::nullopt;
}

// Whether the harness ran this case a second time (float cases, in a correctness run).
bool second_run_dumped(const Problem& problem, const CaseSpec& spec, const std::string& dump_dir) {
    return std::any_of(problem.outputs.begin(), problem.outputs.end(), [&](const OutputSpec& out) {
        return dtype_is_float(out.dtype) && fs::exists(dump_path(dump_dir, spec, out.name, 2));
    });
}

// Images larger than this many pixels are not written by --images (a bench case's 16384^2).
constexpr std::uint64_t kMaxImagePixels = std::uint64_t(1) << 24;

bool is_image(DType dtype, const std::vector<std::uint64_t>& shape) {
    return dtype == DType::u8 && shape.size() == 2 && shape[0] * shape[1] <= kMaxImagePixels;
}

// A binary 8-bit PGM (P5): the format any image viewer and the grader's PNG conversion read.
void write_pgm(const fs::path& path, const std::vector<std::uint64_t>& shape, const std::uint8_t* pixels) {
    std::ofstream file(path, std::ios::binary);
    file << "P5\n" << shape[1] << " " << shape[0] << "\n255\n";
    file.write(reinterpret_cast<const char*>(pixels), static_cast<std::streamsize>(shape[0] * shape[1]));
    if (!file) throw std::runtime_error("cannot write " + path.string());
}

// --images: the case's 2-D 8-bit inputs, expected outputs and dumped outputs as PGMs.
void write_case_images(const Problem& problem, const CaseSpec& spec, const std::vector<HostArray>& inputs,
                       const std::vector<Expected>& expected, const std::vector<HostArray>& got,
                       const std::string& images_dir) {
    const fs::path dir = fs::path(images_dir) / spec.name;
    fs::create_directories(dir);
    for (const auto& in : inputs)
        if (is_image(in.dtype, in.shape)) write_pgm(dir / (in.name + ".pgm"), in.shape, in.as<std::uint8_t>().data());
    for (const auto& e : expected) {
        if (!is_image(problem.output(e.name).dtype, e.shape) || !e.only.empty()) continue;
        std::vector<std::uint8_t> pixels(e.values.size());
        for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(e.values[i]);
        write_pgm(dir / ("expected_" + e.name + ".pgm"), e.shape, pixels.data());
    }
    for (const auto& g : got)
        if (is_image(g.dtype, g.shape) && g.bytes.size() == g.shape[0] * g.shape[1])
            write_pgm(dir / (g.name + ".pgm"), g.shape, g.as<std::uint8_t>().data());
}

CaseReport check_dumped_case(const Problem& problem, const Reference& reference, const CaseSpec& spec,
                             const CheckerOptions& options) {
    // A case with nothing dumped (the program stopped before it) is judged without
    // computing its reference, which for the large cases is the checker's main cost.
    if (!any_output_dumped(problem, spec, options.dump_dir))
        return {spec.name, "missing",
                "no output was dumped for case " + spec.name + " (the program stopped before this case, or never "
                "wrote " + spec.name + ".<output>.bin)",
                {}};
    const auto inputs = make_host_inputs(problem, spec, options.seed);
    const auto expected = reference(spec, inputs);
    std::vector<HostArray> got;
    if (auto unusable = read_run(problem, spec, expected, options, 1, got)) return *unusable;
    if (!options.images_dir.empty()) write_case_images(problem, spec, inputs, expected, got, options.images_dir);
    const CaseReport first = check_case(problem, spec, expected, got);
    // A float case run twice is judged on the worse run, and an answer that changes from
    // run to run is said to (a kept timed sample is a single run).
    if (!second_run_dumped(problem, spec, options.dump_dir)) return first;
    std::vector<HostArray> again;
    if (auto unusable = read_run(problem, spec, expected, options, 2, again)) return *unusable;
    return worse_of_two_runs(first, check_case(problem, spec, expected, again), got, again, expected);
}

}  // namespace

int checker_main(int argc, char** argv, const Problem& problem, const Reference& reference) {
    const std::string program = argc > 0 ? fs::path(argv[0]).filename().string() : problem.name + "_checker";
    CheckerOptions options;
    try {
        options = parse_checker_options(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const UsageError& e) {
        std::cerr << program << ": " << e.what() << "\n" << checker_usage(program);
        return kExitUsage;
    }
    if (options.help) {
        std::cout << checker_usage(program);
        return kExitPassed;
    }

    std::vector<const CaseSpec*> selected;
    try {
        if (options.cases.empty() && options.bench_cases.empty())
            for (const auto& c : problem.cases) selected.push_back(&c);
        for (const auto& name : options.cases) {
            const CaseSpec* c = find_case(problem.cases, name);
            if (!c) throw UsageError("there is no case '" + name + "' in lab " + problem.name);
            selected.push_back(c);
        }
        for (const auto& name : options.bench_cases) {
            const CaseSpec* c = find_case(problem.bench_cases, name);
            if (!c) throw UsageError("there is no bench case '" + name + "' in lab " + problem.name);
            selected.push_back(c);
        }
    } catch (const std::exception& e) {  // an unknown case
        std::cerr << program << ": " << e.what() << "\n";
        return kExitUsage;
    }

    try {
        Json cases = Json::array();
        bool all_passed = true;
        for (const CaseSpec* spec : selected) {
            const CaseReport report = check_dumped_case(problem, reference, *spec, options);
            all_passed = all_passed && report.status == "passed";
            std::cout << (report.status == "passed" ? "PASS " : "FAIL ") << spec->name << ": " << report.message
                      << "\n";
            cases.push_back(to_json(report, *spec));
        }
        const Json verdict{{"schema", kVerdictSchema}, {"lab", problem.name}, {"seed", options.seed},
                           {"all_passed", all_passed}, {"cases", cases}};
        write_json_file(options.verdict_path, verdict);
        return all_passed ? kExitPassed : kExitFailed;
    } catch (const ReferenceNeedsDevice& e) {
        std::cerr << program << ": " << e.what() << "\n";
        return kExitNoDevice;
    } catch (const std::exception& e) {
        std::cerr << program << ": internal error: " << e.what() << "\n";
        return kExitInternal;
    }
}

}  // namespace labkit
