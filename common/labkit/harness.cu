#include "labkit/harness.hpp"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>

#include "labkit/binary_io.hpp"
#include "labkit/check.hpp"
#include "labkit/cli.hpp"
#include "labkit/exit_codes.hpp"
#include "labkit/report.hpp"
#include "labkit/timing.hpp"

namespace labkit {
namespace {

namespace fs = std::filesystem;

struct Session {
    const Problem& problem;
    const MakeDeviceRun& make_run;
    HarnessOptions options;
    std::string program;
    std::optional<DeviceInfo> device;
    Json json;
};

Json device_json(const DeviceInfo& d, double sm_clock_mhz) {
    return Json{{"name", d.name},
                {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
                {"sm_count", d.sm_count},
                {"l2_bytes", d.l2_bytes},
                {"global_memory_bytes", d.global_memory_bytes},
                {"driver_version", d.driver_version},
                {"runtime_version", d.runtime_version},
                {"sm_clock_mhz", sm_clock_mhz}};
}

std::vector<const CaseSpec*> select(const std::vector<CaseSpec>& all, const std::vector<std::string>& names,
                                    const std::string& kind, const std::string& lab) {
    std::vector<const CaseSpec*> chosen;
    if (names.empty())
        for (const auto& c : all) chosen.push_back(&c);
    for (const auto& name : names) {
        const CaseSpec* c = find_case(all, name);
        if (!c) throw UsageError("lab " + lab + " has no " + kind + " '" + name + "' (--list-cases shows them)");
        chosen.push_back(c);
    }
    return chosen;
}

std::vector<HostArray> download_all(DeviceRun& run) {
    std::vector<HostArray> got;
    for (DeviceArray* out : run.outputs()) got.push_back(out->download());
    return got;
}

void dump(const Session& s, const CaseSpec& spec, const std::vector<HostArray>& got) {
    if (s.options.dump_dir.empty()) return;
    fs::create_directories(s.options.dump_dir);
    for (const auto& array : got)
        write_array(dump_path(s.options.dump_dir, spec, array.name), array);
}

std::string params_text(const CaseSpec& spec) {
    std::string text;
    for (const auto& [k, v] : spec.params) text += (text.empty() ? "" : ", ") + k + "=" + std::to_string(v);
    return text;
}

// Under --no-self-check the outputs are only dumped: the lab's checker, run by whoever
// asked for that (the grader, `cudalab ladder`), judges them, so this process skips
// the CPU reference, which for the large cases costs more than the GPU work.
CaseReport check_or_skip(const Session& s, const CaseSpec& spec, const std::vector<HostArray>& inputs,
                         const std::vector<HostArray>& got) {
    if (s.options.self_check) return check_case(s.problem, spec, s.problem.reference(spec, inputs), got);
    return CaseReport{spec.name, "unchecked", "not checked here (--no-self-check); outputs in " + s.options.dump_dir,
                      {}};
}

// --- correctness --------------------------------------------------------------------

int run_cases(Session& s) {
    const auto selected = select(s.problem.cases, s.options.cases, "case", s.problem.name);
    int passed = 0;
    Json cases = Json::array();
    for (const CaseSpec* spec : selected) {
        const auto inputs = s.problem.make_inputs(*spec, s.options.seed);
        auto run = s.make_run(*spec, inputs);
        for (DeviceArray* out : run->outputs()) out->poison();
        run->run();
        LABKIT_CHECK_LAUNCH();
        LABKIT_CHECK(cudaDeviceSynchronize());
        const auto got = download_all(*run);
        run.reset();
        dump(s, *spec, got);
        const CaseReport report = check_or_skip(s, *spec, inputs, got);
        if (report.status == "passed") ++passed;
        const char* verdict = report.status == "passed" ? "PASS" : report.status == "unchecked" ? "RAN " : "FAIL";
        if (!s.options.quiet || report.status == "failed")
            std::printf("%s %-14s (%s): %s\n", verdict, spec->name.c_str(), params_text(*spec).c_str(),
                        report.message.c_str());
        cases.push_back(to_json(report, *spec));
        s.json["cases"] = cases;
    }
    if (!s.options.self_check) {
        std::printf("%zu cases ran; their outputs are in %s, not checked here (--no-self-check).\n",
                    selected.size(), s.options.dump_dir.c_str());
        s.json["status"] = "unchecked";
        return kExitPassed;
    }
    const bool all = passed == static_cast<int>(selected.size());
    std::printf("%d of %zu cases passed%s\n", passed, selected.size(),
                all ? "." : ". The first FAIL line above says where your output first went wrong.");
    s.json["status"] = all ? "passed" : "failed";
    return all ? kExitPassed : kExitFailed;
}

// --- benchmark ----------------------------------------------------------------------

Json timing_json(const Timing& t) {
    return Json{{"samples_ms", t.samples_ms},  {"median_ms", t.summary.median}, {"min_ms", t.summary.min},
                {"max_ms", t.summary.max},     {"spread", t.summary.spread},   {"l2_flushed", t.l2_flushed},
                {"sm_clock_mhz_before", t.sm_clock_mhz_before},
                {"sm_clock_mhz_after", t.sm_clock_mhz_after}};
}

double gbps(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0.0; }

// The memory roof, measured in this run: a device-to-device copy moving the same number
// of bytes (half read, half written) as the lab's byte model says the case moves.
Timing time_copy_baseline(Timer& timer, double bytes_moved, const TimingOptions& options) {
    const std::size_t half = (static_cast<std::size_t>(bytes_moved / 2) + 255) / 256 * 256;
    DeviceBuffer src(half), dst(half);
    LABKIT_CHECK(cudaMemset(src.data(), 0x3C, half));
    return timer.measure([] {}, [&] { LABKIT_CHECK(cudaMemcpyAsync(dst.data(), src.data(), half,
                                                                  cudaMemcpyDeviceToDevice)); },
                         options);
}

int run_bench(Session& s) {
    const auto selected = select(s.problem.bench_cases, s.options.bench_cases, "bench case", s.problem.name);
    const TimingOptions options{s.options.warmup, s.options.samples};
    Timer timer(*s.device);
    bool all_passed = true;
    Json rows = Json::array();
    std::printf("%-12s %10s %8s %10s %9s %12s  %s\n", "case", "median ms", "spread", "GB/s", "% copy",
                "vs library", "check");
    for (const CaseSpec* spec : selected) {
        const double bytes = s.problem.bytes_moved(*spec);
        Json row{{"name", spec->name}, {"params", params_json(*spec)}, {"bytes_moved", bytes}};
        const auto inputs = s.problem.make_inputs(*spec, s.options.seed);
        Timing mine, library;
        const char* library_name = nullptr;
        CaseReport report;
        {
            auto run = s.make_run(*spec, inputs);
            auto poison = [&] { for (DeviceArray* out : run->outputs()) out->poison(); };
            // The outputs checked are those of one timed sample drawn at random when the
            // program runs: every sample starts poisoned, so code that skips work on some
            // calls (having guessed which one is checked) leaves poison behind.
            std::random_device entropy;
            const int checked_sample = std::uniform_int_distribution<int>(0, options.samples - 1)(entropy);
            std::vector<HostArray> got;
            mine = timer.measure(poison, [&] { run->run(); }, options, [&](int sample) {
                if (sample == checked_sample) got = download_all(*run);
            });
            dump(s, *spec, got);
            report = check_or_skip(s, *spec, inputs, got);
            library_name = run->library_name();
            if (library_name) library = timer.measure(poison, [&] { run->run_library(); }, options);
        }
        const Timing copy = time_copy_baseline(timer, bytes, options);

        const double my_gbps = gbps(bytes, mine.summary.median);
        const double copy_gbps = gbps(bytes, copy.summary.median);
        row["status"] = report.status;
        row["message"] = report.message;
        row["warmup"] = options.warmup;
        row.update(timing_json(mine));
        row["gbps"] = my_gbps;
        row["baseline"] = Json{{"name", "device-to-device copy"}, {"bytes_moved", bytes},
                               {"median_ms", copy.summary.median}, {"spread", copy.summary.spread},
                               {"gbps", copy_gbps}};
        row["fraction_of_baseline"] = copy_gbps > 0 ? my_gbps / copy_gbps : 0.0;
        std::string vs_library = "-";
        if (library_name) {
            const double lib_gbps = gbps(bytes, library.summary.median);
            row["library"] = Json{{"name", library_name}, {"median_ms", library.summary.median},
                                  {"spread", library.summary.spread}, {"gbps", lib_gbps}};
            row["fraction_of_library"] = mine.summary.median > 0 ? library.summary.median / mine.summary.median : 0.0;
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.3fx", row["fraction_of_library"].get<double>());
            vs_library = buf;
        }
        all_passed = all_passed && (report.status == "passed" || report.status == "unchecked");
        std::printf("%-12s %10.4f %7.2f%% %10.1f %8.1f%% %12s  %s\n", spec->name.c_str(), mine.summary.median,
                    100.0 * mine.summary.spread, my_gbps, 100.0 * row["fraction_of_baseline"].get<double>(),
                    vs_library.c_str(), report.status == "passed"      ? "ok"
                                        : report.status == "unchecked" ? "unchecked"
                                                                       : report.message.c_str());
        rows.push_back(row);
        s.json["bench"] = rows;
    }
    if (!all_passed) std::printf("Some bench runs gave wrong results: their times do not count.\n");
    s.json["status"] = !all_passed ? "failed" : s.options.self_check ? "passed" : "unchecked";
    return all_passed ? kExitPassed : kExitFailed;
}

void write_json(const Session& s) {
    if (s.options.json_path.empty()) return;
    try {
        write_json_file(s.options.json_path, s.json);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", s.program.c_str(), e.what());
    }
}

}  // namespace

int harness_main(int argc, char** argv, const Problem& problem, const MakeDeviceRun& make_run) {
    Session s{problem, make_run, {}, argc > 0 ? fs::path(argv[0]).filename().string() : problem.name, {}, {}};
    try {
        s.options = parse_harness_options(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const UsageError& e) {
        std::fprintf(stderr, "%s: %s\n%s", s.program.c_str(), e.what(), harness_usage(s.program).c_str());
        return kExitUsage;
    }
    if (s.options.help) {
        std::cout << harness_usage(s.program);
        return kExitPassed;
    }
    if (s.options.list_cases) {
        for (const auto& c : problem.cases) std::printf("case        %-14s %s\n", c.name.c_str(), params_text(c).c_str());
        for (const auto& c : problem.bench_cases)
            std::printf("bench-case  %-14s %s\n", c.name.c_str(), params_text(c).c_str());
        return kExitPassed;
    }

    s.json = Json{{"schema", kRunSchema}, {"lab", problem.name}, {"implementation", s.program},
                  {"seed", s.options.seed}, {"mode", s.options.bench ? "bench" : "check"}, {"status", "error"}};
    int code = kExitInternal;
    try {
        s.device = query_device();
        s.json["device"] = device_json(*s.device, measure_sm_clock_mhz());
        code = s.options.bench ? run_bench(s) : run_cases(s);
    } catch (const NoDevice& e) {
        std::fprintf(stderr,
                     "%s: %s.\nNothing was run: this is not a failure of your code. Run it on a machine with an "
                     "NVIDIA GPU (nvidia-smi should list one).\n",
                     s.program.c_str(), e.what());
        s.json["status"] = "no_device";
        s.json["message"] = e.what();
        code = kExitNoDevice;
    } catch (const CudaError& e) {
        std::fprintf(stderr,
                     "%s: CUDA error: %s\nA kernel that reads or writes out of bounds is the usual cause of an "
                     "illegal address; run under compute-sanitizer to find the line.\n",
                     s.program.c_str(), e.what());
        s.json["status"] = "cuda_error";
        s.json["message"] = e.what();
        code = kExitCudaError;
    } catch (const UsageError& e) {
        std::fprintf(stderr, "%s: %s\n", s.program.c_str(), e.what());
        s.json["status"] = "usage";
        s.json["message"] = e.what();
        code = kExitUsage;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: internal error: %s\n", s.program.c_str(), e.what());
        s.json["status"] = "internal";
        s.json["message"] = e.what();
        code = kExitInternal;
    }
    std::fflush(stdout);
    write_json(s);
    return code;
}

}  // namespace labkit
