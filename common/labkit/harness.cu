#include "labkit/harness.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>

#include <nvtx3/nvToolsExt.h>

#include "labkit/binary_io.hpp"
#include "labkit/check.hpp"
#include "labkit/cli.hpp"
#include "labkit/exit_codes.hpp"
#include "labkit/report.hpp"
#include "labkit/timing.hpp"

namespace labkit {
namespace {

// The --block shape of this run (0 x 0: the implementation chooses), for requested_block().
BlockShape g_requested_block{};

namespace fs = std::filesystem;

struct Session {
    const Problem& problem;
    const MakeDeviceRun& make_run;
    const EstimateRunMemory& run_memory;
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

std::string params_text(const CaseSpec& spec) {
    std::string text;
    for (const auto& [k, v] : spec.params) text += (text.empty() ? "" : ", ") + k + "=" + std::to_string(v);
    return text;
}

// --- GPU memory ---------------------------------------------------------------------
//
// A bench case at 2^28 elements needs about 3 GiB; a laptop GPU may have 4 GiB in all. So
// before a bench case allocates anything, the harness adds up what it will allocate and
// compares that with the free memory (labkit/memory_fit.hpp): a case that does not fit is
// skipped with a sentence (--bench) or refused with one (--paced), never left to fail with
// out-of-memory halfway.

// Everything `spec` allocates, from its description alone: the inputs the harness makes,
// what the lab's estimate says its DeviceRun makes, and the harness's own buffers (the
// output hasher with --paced, the copy baseline's two buffers with --bench's baselines).
CaseMemory case_memory(const Session& s, const CaseSpec& spec, bool hashing, bool copy_baseline) {
    CaseMemory memory;
    for (const InputSpec& in : s.problem.inputs(spec)) {
        memory.inputs += static_cast<std::size_t>(in.size()) * dtype_size(in.dtype);
        // A tiled photograph is on the device while its fill runs.
        if (in.fill.kind == Fill::Kind::tiles_u8)
            memory.inputs += static_cast<std::size_t>(in.fill.source_width) * in.fill.source_height;
    }
    if (s.run_memory) memory.run = s.run_memory(spec);
    // The hasher is made for the largest output; all outputs together bound it from above.
    if (hashing) memory.hasher = DeviceHasher::scratch_bytes(std::max<std::size_t>(memory.run.outputs, 1));
    if (copy_baseline) memory.copy_baseline = copy_baseline_bytes(s.problem.bytes_moved(spec));
    return memory;
}

// cudaMemGetInfo's free memory now, capped by CUDALAB_GPU_MEMORY_LIMIT where a test set it.
std::size_t free_gpu_memory() {
    std::size_t free = 0, total = 0;
    LABKIT_CHECK(cudaMemGetInfo(&free, &total));
    if (const char* limit = std::getenv(kGpuMemoryLimitEnv); limit && *limit)
        free = std::min<std::size_t>(free, parse_u64(limit, kGpuMemoryLimitEnv));
    return free;
}

Json memory_json(const CaseMemory& memory, const MemoryFit& fit) {
    return Json{{"needed_bytes", fit.needed},          {"needed_with_margin_bytes", fit.with_margin},
                {"free_bytes", fit.free},              {"inputs_bytes", memory.inputs},
                {"outputs_bytes", memory.run.outputs}, {"workspace_bytes", memory.run.workspace},
                {"library_bytes", memory.run.library}, {"hasher_bytes", memory.hasher},
                {"copy_baseline_bytes", memory.copy_baseline}};
}

// What a student can do about a case that does not fit, after the sentence that says so.
std::string memory_advice(const CaseMemory& memory) {
    if (memory.run.workspace > memory.inputs + memory.run.outputs)
        return "Most of it is the workspace your code asks for (" + bytes_text(memory.run.workspace) +
               "): check your workspace size function.";
    return "This is the GPU's size, not a problem with your code: close other programs that use the GPU "
           "(nvidia-smi lists them) or run this case on a GPU with more memory.";
}

// One case on the device: its input arrays (refilled from a seed before every call), and
// the lab's DeviceRun over them.
class CaseOnDevice {
public:
    CaseOnDevice(const Session& s, const CaseSpec& spec) : input_specs_(s.problem.inputs(spec)) {
        std::vector<DeviceArray*> pointers;
        for (const InputSpec& in : input_specs_) {
            inputs_.push_back(std::make_unique<DeviceArray>(in.name, in.dtype, in.shape));
            pointers.push_back(inputs_.back().get());
        }
        run_ = s.make_run(spec, pointers);
    }

    // Fresh inputs from `seed`, poisoned outputs and a garbage workspace: a call that
    // skips any work, or that returns something remembered from an earlier call, leaves
    // wrong values behind.
    void prepare(std::uint64_t seed) {
        for (std::size_t i = 0; i < inputs_.size(); ++i) fill_on_device(*inputs_[i], input_specs_[i], seed);
        for (DeviceArray* out : run_->outputs()) out->poison();
        for (DeviceBuffer* workspace : run_->workspaces())
            if (workspace->bytes()) LABKIT_CHECK(cudaMemsetAsync(workspace->data(), 0xCD, workspace->bytes()));
    }

    std::vector<HostArray> download_outputs() {
        LABKIT_CHECK(cudaDeviceSynchronize());
        std::vector<HostArray> got;
        for (DeviceArray* out : run_->outputs()) got.push_back(out->download());
        return got;
    }

    std::size_t largest_output_bytes() {
        std::size_t bytes = 0;
        for (DeviceArray* out : run_->outputs()) bytes = std::max(bytes, out->bytes());
        return bytes;
    }

    DeviceRun& run() { return *run_; }

private:
    std::vector<InputSpec> input_specs_;
    std::vector<std::unique_ptr<DeviceArray>> inputs_;
    std::unique_ptr<DeviceRun> run_;
};

void dump_outputs(const fs::path& dir, const CaseSpec& spec, const std::vector<HostArray>& got, int run = 1) {
    fs::create_directories(dir);
    for (const auto& array : got) write_array(dump_path(dir.string(), spec, array.name, run), array);
}

// Keeps every SM partly busy for about `cycles` clock ticks, on a stream of its own that
// does not wait for (nor hold up) the default stream.
__global__ void occupy_every_sm(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

// Before a float case's second run: occupy part of every SM for a moment, so that the
// call's blocks start and finish in another order than on the first run. A fixed order of
// additions (a tree) gives the same bits anyway; an order that follows timing (atomicAdd
// of block sums) shows itself as a different answer, which the checker then explains.
void shuffle_block_order() {
    static cudaStream_t stream = nullptr;
    if (stream == nullptr) LABKIT_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    int device = 0, sms = 0;
    LABKIT_CHECK(cudaGetDevice(&device));
    LABKIT_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    occupy_every_sm<<<sms, 1024, 0, stream>>>(200000);  // about 0.1 ms at 2 GHz
    LABKIT_CHECK_LAUNCH();
}

bool any_float(const std::vector<HostArray>& arrays) {
    return std::any_of(arrays.begin(), arrays.end(), [](const HostArray& a) { return dtype_is_float(a.dtype); });
}

// Every call of the code under test sits in an NVTX range of this name, so that a
// profiler can be told to look at those kernels only (`cudalab ladder --profile` asks
// Nsight Compute for the lecture's table this way), and not at the harness's own input
// generation and poisoning. Without a profiler attached an NVTX range costs a few
// nanoseconds of host time.
constexpr const char* kCodeUnderTestRange = "cudalab:code-under-test";

void run_code_under_test(DeviceRun& run) {
    nvtxRangePushA(kCodeUnderTestRange);
    run.run();
    nvtxRangePop();
}

// --- correctness --------------------------------------------------------------------

int run_cases(Session& s) {
    const auto selected = select(s.problem.cases, s.options.cases, "case", s.problem.name);
    Json cases = Json::array();
    for (const CaseSpec* spec : selected) {
        CaseOnDevice c(s, *spec);
        c.prepare(s.options.seed);
        run_code_under_test(c.run());
        LABKIT_CHECK_LAUNCH();
        LABKIT_CHECK(cudaDeviceSynchronize());
        const auto got = c.download_outputs();
        if (!s.options.dump_dir.empty()) dump_outputs(s.options.dump_dir, *spec, got);
        // A float case runs a second time on the same inputs, its outputs poisoned anew and
        // its blocks scheduled differently: the checker compares the two bit for bit and
        // judges the worse (an answer whose order of additions follows timing changes).
        if (any_float(got)) {
            c.prepare(s.options.seed);
            shuffle_block_order();
            run_code_under_test(c.run());
            LABKIT_CHECK_LAUNCH();
            LABKIT_CHECK(cudaDeviceSynchronize());
            const auto again = c.download_outputs();
            if (!s.options.dump_dir.empty()) dump_outputs(s.options.dump_dir, *spec, again, 2);
        }
        if (!s.options.quiet) std::printf("RAN  %-14s (%s)\n", spec->name.c_str(), params_text(*spec).c_str());
        cases.push_back(Json{{"name", spec->name}, {"params", params_json(*spec)}, {"status", "unchecked"}});
        s.json["cases"] = cases;
    }
    if (s.options.dump_dir.empty())
        std::printf("%zu cases ran. Their outputs were not kept: `cudalab run` checks them with the lab's checker "
                    "(or give --dump DIR and run the checker yourself).\n",
                    selected.size());
    else
        std::printf("%zu cases ran; their outputs are in %s for the lab's checker to judge.\n", selected.size(),
                    s.options.dump_dir.c_str());
    s.json["status"] = "unchecked";
    return kExitPassed;
}

// --- benchmark, self-paced ----------------------------------------------------------

Json timing_json(const Timing& t) {
    return Json{{"samples_ms", t.samples_ms},  {"median_ms", t.summary.median}, {"min_ms", t.summary.min},
                {"max_ms", t.summary.max},     {"spread", t.summary.spread},   {"l2_flushed", t.l2_flushed},
                {"sm_clock_mhz_before", t.sm_clock_mhz_before},
                {"sm_clock_mhz_after", t.sm_clock_mhz_after}};
}

double gbps(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0.0; }
double tflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0; }
double per_second(double items, double ms) { return ms > 0 ? items / (ms * 1e-3) : 0.0; }

// The memory roof, measured in this run: a device-to-device copy moving the same number
// of bytes (half read, half written) as the lab's byte model says the case moves.
Timing time_copy_baseline(Timer& timer, double bytes_moved, const TimingOptions& options) {
    const std::size_t half = copy_baseline_half_bytes(bytes_moved);  // what case_memory counted
    DeviceBuffer src(half), dst(half);
    LABKIT_CHECK(cudaMemset(src.data(), 0x3C, half));
    return timer.measure([](int) {}, [&] { LABKIT_CHECK(cudaMemcpyAsync(dst.data(), src.data(), half,
                                                                       cudaMemcpyDeviceToDevice)); },
                         options);
}

int run_bench(Session& s) {
    const auto selected = select(s.problem.bench_cases, s.options.bench_cases, "bench case", s.problem.name);
    const TimingOptions options{s.options.warmup, s.options.samples};
    Timer timer(*s.device);
    Json rows = Json::array();
    std::printf("%-12s %10s %8s %10s %9s %12s\n", "case", "median ms", "spread", "GB/s", "% copy", "vs library");
    for (const CaseSpec* spec : selected) {
        const double bytes = s.problem.bytes_moved(*spec);
        Json row{{"name", spec->name}, {"params", params_json(*spec)}, {"bytes_moved", bytes}};
        const CaseMemory memory = case_memory(s, *spec, false, s.options.baselines);
        const MemoryFit fit = check_memory_fit(memory.peak(), free_gpu_memory());
        if (!fit.fits) {
            // Skipped, and said so; the other cases still run. The entry has no timings.
            const std::string reason = describe_memory_shortfall(fit, s.device->name);
            std::fprintf(stderr, "%s: bench case %s skipped: it %s (%s). %s\n", s.program.c_str(),
                         spec->name.c_str(), reason.c_str(), describe_case_memory(memory).c_str(),
                         memory_advice(memory).c_str());
            std::printf("%-12s skipped: not enough free GPU memory (%s needed, %s free)\n", spec->name.c_str(),
                        bytes_text(fit.needed).c_str(), bytes_text(fit.free).c_str());
            row["status"] = "skipped";
            row["reason"] = reason;
            row["memory"] = memory_json(memory, fit);
            rows.push_back(row);
            s.json["bench"] = rows;
            continue;
        }
        Timing mine, library;
        const char* library_name = nullptr;
        {
            CaseOnDevice c(s, *spec);
            auto prepare = [&](int sample) { c.prepare(sample_seed(s.options.seed, static_cast<std::uint64_t>(sample))); };
            // The outputs kept for the checker are those of one timed sample drawn at
            // random here; every sample has inputs of its own and starts poisoned.
            std::random_device entropy;
            const int drawn = std::uniform_int_distribution<int>(0, options.samples - 1)(entropy);
            mine = timer.measure(prepare, [&] { run_code_under_test(c.run()); }, options, [&](int sample) {
                if (sample != drawn || s.options.dump_dir.empty()) return;
                dump_outputs(s.options.dump_dir, *spec, c.download_outputs());
                row["checked_sample_seed"] = sample_seed(s.options.seed, static_cast<std::uint64_t>(sample));
            });
            library_name = c.run().library_name();
            if (library_name && s.options.baselines)
                library = timer.measure(prepare, [&] { c.run().run_library(); }, options);
            if (!library_name && s.options.baselines && !c.run().library_unavailable().empty())
                row["library"] = Json{{"unavailable", c.run().library_unavailable()}};
        }
        row["status"] = "unchecked";
        row["warmup"] = options.warmup;
        row.update(timing_json(mine));
        const double my_gbps = gbps(bytes, mine.summary.median);
        row["gbps"] = my_gbps;
        const double flops = s.problem.flops ? s.problem.flops(*spec) : 0.0;
        if (flops > 0) row["tflops"] = tflops(flops, mine.summary.median);
        const double items = s.problem.items ? s.problem.items(*spec) : 0.0;
        if (items > 0) {
            row["items_name"] = s.problem.items_name;
            row["items_per_s"] = per_second(items, mine.summary.median);
        }
        std::string vs_library = "-", of_copy = "-";
        if (s.options.baselines) {
            const Timing copy = time_copy_baseline(timer, bytes, options);
            const double copy_gbps = gbps(bytes, copy.summary.median);
            row["baseline"] = Json{{"name", "device-to-device copy"}, {"bytes_moved", bytes},
                                   {"median_ms", copy.summary.median}, {"spread", copy.summary.spread},
                                   {"gbps", copy_gbps}};
            row["fraction_of_baseline"] = copy_gbps > 0 ? my_gbps / copy_gbps : 0.0;
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * row["fraction_of_baseline"].get<double>());
            of_copy = buf;
            if (library_name) {
                row["library"] = Json{{"name", library_name}, {"median_ms", library.summary.median},
                                      {"spread", library.summary.spread}, {"gbps", gbps(bytes, library.summary.median)}};
                if (flops > 0) row["library"]["tflops"] = tflops(flops, library.summary.median);
                if (items > 0) row["library_items_per_s"] = per_second(items, library.summary.median);
                row["fraction_of_library"] =
                    mine.summary.median > 0 ? library.summary.median / mine.summary.median : 0.0;
                std::snprintf(buf, sizeof buf, "%.3fx", row["fraction_of_library"].get<double>());
                vs_library = buf;
            }
        }
        std::printf("%-12s %10.4f %7.2f%% %10.1f %9s %12s\n", spec->name.c_str(), mine.summary.median,
                    100.0 * mine.summary.spread, my_gbps, of_copy.c_str(), vs_library.c_str());
        rows.push_back(row);
        s.json["bench"] = rows;
    }
    std::printf(s.options.dump_dir.empty()
                    ? "Times only: without --dump no sample's outputs were kept, so nothing here says they were right.\n"
                    : "One timed sample's outputs per case are in the dump folder for the lab's checker.\n");
    s.json["status"] = "unchecked";
    return kExitPassed;
}

// --- benchmark, paced by the grader -------------------------------------------------
//
// The grader sends each sample's seed and hash key and reads back, per sample, the
// event time and the outputs' hashes; it times every sample on its own clock, and it
// decides only after a sample has ended whether it wants that sample's outputs. A
// "blank" sample does all the harness's own work but does not call the implementation:
// its time on the grader's clock is the overhead that the timed samples, mixed among
// the blank ones in an order the program cannot know, also carry.
// Messages are single text lines (docs/architecture.md, "Paced timing").

class ControlChannel {
public:
    ControlChannel(int in, int out) : in_(in), out_(out) {}

    // The next line without its newline; nullopt at the end of input.
    std::optional<std::string> read_line() {
        for (;;) {
            if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
                std::string line = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                return line;
            }
            if (buffer_.size() > kMaxLine) throw UsageError("a control line from the grader is too long");
            char chunk[256];
            const ssize_t got = ::read(in_, chunk, sizeof chunk);
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) throw std::runtime_error("reading the control channel failed");
            if (got == 0) return std::nullopt;
            buffer_.append(chunk, static_cast<std::size_t>(got));
        }
    }

    void write_line(const std::string& line) {
        const std::string text = line + "\n";
        std::size_t done = 0;
        while (done < text.size()) {
            const ssize_t wrote = ::write(out_, text.data() + done, text.size() - done);
            if (wrote < 0 && errno == EINTR) continue;
            if (wrote <= 0) throw std::runtime_error("writing the control channel failed");
            done += static_cast<std::size_t>(wrote);
        }
    }

private:
    static constexpr std::size_t kMaxLine = 4096;
    int in_, out_;
    std::string buffer_;
};

std::vector<std::string> words(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

int run_paced(Session& s) {
    const CaseSpec& spec = *select(s.problem.bench_cases, s.options.bench_cases, "bench case", s.problem.name).at(0);
    ControlChannel control(s.options.control_in, s.options.control_out);
    Timer timer(*s.device);
    // A grade times one case: one that cannot fit here is refused with a sentence before
    // anything of it is allocated (exit 4, "can't run here"), not left to run out of memory.
    const CaseMemory memory = case_memory(s, spec, true, false);
    const MemoryFit fit = check_memory_fit(memory.peak(), free_gpu_memory());
    if (!fit.fits) {
        s.json["memory"] = memory_json(memory, fit);
        throw NoDevice("bench case " + spec.name + " cannot be timed on this GPU: it " +
                           describe_memory_shortfall(fit, s.device->name) + " (" + describe_case_memory(memory) +
                           "). " + memory_advice(memory),
                       "insufficient_memory");
    }
    CaseOnDevice c(s, spec);
    DeviceHasher hasher(std::max<std::size_t>(c.largest_output_bytes(), 1));
    std::string names;
    for (DeviceArray* out : c.run().outputs()) names += " " + out->name();
    control.write_line("ready " + spec.name + names);

    std::vector<double> timed_ms;
    const double clock_before = measure_sm_clock_mhz();
    for (;;) {
        const auto line = control.read_line();
        if (!line) throw UsageError("the grader closed the control channel without saying end");
        const auto w = words(*line);
        if (w.size() == 1 && w[0] == "end") break;
        if (w.size() != 5 || w[0] != "sample" || (w[4] != "timed" && w[4] != "warmup" && w[4] != "blank"))
            throw UsageError("unexpected control line '" + *line + "' (expected 'sample N SEED KEY timed|warmup|blank')");
        const std::uint64_t number = parse_u64(w[1], "sample number"), seed = parse_u64(w[2], "sample seed");
        const Hash128 key = hash_from_hex(w[3]);
        const bool blank = w[4] == "blank";
        const double ms = timer.time_sample([&] { c.prepare(seed); }, [&] {
            if (!blank) c.run().run();
        });
        if (w[4] == "timed") timed_ms.push_back(ms);
        std::ostringstream reply;
        reply << "done " << w[1] << ' ' << std::to_string(ms);
        for (DeviceArray* out : c.run().outputs()) reply << ' ' << to_hex(hasher.hash(*out, key));
        control.write_line(reply.str());

        const auto decision = control.read_line();
        if (decision && *decision == "keep") {
            dump_outputs(fs::path(s.options.dump_dir) / ("sample-" + std::to_string(number)), spec, c.download_outputs());
            control.write_line("kept " + w[1]);
        } else if (!decision || *decision != "drop") {
            throw UsageError("expected 'keep' or 'drop' from the grader after sample " + w[1]);
        }
    }
    Json row{{"name", spec.name}, {"params", params_json(spec)}, {"bytes_moved", s.problem.bytes_moved(spec)},
             {"status", "unchecked"}, {"paced", true}, {"samples_ms", timed_ms},
             {"sm_clock_mhz_before", clock_before}, {"sm_clock_mhz_after", measure_sm_clock_mhz()}};
    if (!timed_ms.empty()) {
        const SampleSummary summary = summarise(timed_ms);
        row["median_ms"] = summary.median;
        row["spread"] = summary.spread;
    }
    s.json["bench"] = Json::array({row});
    s.json["status"] = "unchecked";
    return kExitPassed;
}

// The run JSON is how the program reports what it did; when it cannot be written the
// program has failed at its job, and says so in its exit code.
int write_json(const Session& s, int code) {
    if (s.options.json_path.empty()) return code;
    try {
        write_json_file(s.options.json_path, s.json);
        return code;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", s.program.c_str(), e.what());
        return code == kExitPassed ? kExitInternal : code;
    }
}

}  // namespace

BlockShape requested_block() { return g_requested_block; }

int harness_main(int argc, char** argv, const Problem& problem, const MakeDeviceRun& make_run,
                 const EstimateRunMemory& run_memory) {
    Session s{problem, make_run, run_memory, {}, argc > 0 ? fs::path(argv[0]).filename().string() : problem.name,
              {}, {}};
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
    if ((s.options.block_x != 0) && !problem.takes_block) {
        std::fprintf(stderr, "%s: --block: the %s lab's API takes no block shape; only labs whose functions take one "
                     "(sobel) accept --block\n", s.program.c_str(), problem.name.c_str());
        return kExitUsage;
    }
    g_requested_block = BlockShape{s.options.block_x, s.options.block_y};
    if (s.options.list_cases) {
        for (const auto& c : problem.cases) std::printf("case        %-14s %s\n", c.name.c_str(), params_text(c).c_str());
        for (const auto& c : problem.bench_cases)
            std::printf("bench-case  %-14s %s\n", c.name.c_str(), params_text(c).c_str());
        return kExitPassed;
    }

    s.json = Json{{"schema", kRunSchema}, {"lab", problem.name}, {"implementation", s.program},
                  {"seed", s.options.seed}, {"mode", s.options.paced ? "paced" : s.options.bench ? "bench" : "check"},
                  {"status", "error"}};
    if (s.options.block_x != 0)
        s.json["block"] = std::to_string(s.options.block_x) + "x" + std::to_string(s.options.block_y);
    int code = kExitInternal;
    try {
        s.device = query_device();
        s.json["device"] = device_json(*s.device, measure_sm_clock_mhz());
        code = s.options.paced ? run_paced(s) : s.options.bench ? run_bench(s) : run_cases(s);
    } catch (const NoDevice& e) {
        // Exit 4 whatever the reason: nothing (more) could run here, never a failure of the
        // code under test. The JSON's "reason" says which: no_device, driver_too_old or
        // insufficient_memory.
        const std::string& reason = e.reason();
        const char* advice = reason == "driver_too_old"        ? "Nothing was run: this is not a failure of your code."
                             : reason == "insufficient_memory" ? "Nothing was timed."
                                                               : "Nothing was run: this is not a failure of your code. "
                                                                 "Run it on a machine with an NVIDIA GPU (nvidia-smi "
                                                                 "should list one).";
        std::string what = e.what();
        if (!what.empty() && what.back() != '.') what += '.';
        std::fprintf(stderr, "%s: %s\n%s\n", s.program.c_str(), what.c_str(), advice);
        s.json["status"] = "no_device";
        s.json["reason"] = reason;
        s.json["message"] = e.what();
        if (const auto* old = dynamic_cast<const DriverTooOld*>(&e)) {
            s.json["driver_cuda_version"] = cuda_version_text(old->driver_version);
            s.json["runtime_cuda_version"] = cuda_version_text(old->runtime_version);
        }
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
    return write_json(s, code);
}

}  // namespace labkit
