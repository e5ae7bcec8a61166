#include "labkit/audit.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <functional>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <vector>

#include "labkit/binary_io.hpp"
#include "labkit/case_on_device.hpp"
#include "labkit/check.hpp"
#include "labkit/cli.hpp"
#include "labkit/exit_codes.hpp"
#include "labkit/line_channel.hpp"
#include "labkit/memory_fit.hpp"
#include "labkit/shared_arena.hpp"
#include "labkit/signal_page.hpp"
#include "labkit/timing.hpp"

namespace labkit {
namespace {

namespace fs = std::filesystem;

constexpr int kScreenBlocks = 1024;
constexpr int kScreenThreads = 256;

// --- comparisons ---------------------------------------------------------------------------

struct Counters {
    unsigned long long count;
    unsigned long long first;
};

// This thread's share of a loop over the whole grid: its first index, and the whole grid's width.
struct Share {
    std::size_t first;
    std::size_t width;
};

__device__ Share my_share() {
    const std::size_t threads = blockDim.x;
    return {blockIdx.x * threads + threadIdx.x, gridDim.x * threads};
}

__device__ void note_differences(Counters* out, unsigned long long count, unsigned long long first) {
    if (count == 0) return;
    atomicAdd(&out->count, count);
    atomicMin(&out->first, first);
}

// Whole 16-byte vectors first (when both arrays are aligned to them), then element by
// element for what is left.
__global__ void count_unequal_kernel(const unsigned char* a, const unsigned char* b, std::size_t bytes,
                                     unsigned element, std::size_t vectors, Counters* out) {
    const Share share = my_share();
    unsigned long long count = 0, first = ~0ull;
    const auto* va = reinterpret_cast<const uint4*>(a);
    const auto* vb = reinterpret_cast<const uint4*>(b);
    for (std::size_t v = share.first; v < vectors; v += share.width) {
        const uint4 x = va[v], y = vb[v];
        if (x.x == y.x && x.y == y.y && x.z == y.z && x.w == y.w) continue;
        for (unsigned e = 0; e < 16; e += element) {
            bool differ = false;
            for (unsigned k = 0; k < element; ++k) differ |= a[v * 16 + e + k] != b[v * 16 + e + k];
            if (differ) {
                ++count;
                first = min(first, static_cast<unsigned long long>((v * 16 + e) / element));
            }
        }
    }
    const std::size_t tail_first = vectors * 16 / element, elements = bytes / element;
    for (std::size_t i = tail_first + share.first; i < elements; i += share.width) {
        bool differ = false;
        for (unsigned k = 0; k < element; ++k) differ |= a[i * element + k] != b[i * element + k];
        if (differ) {
            ++count;
            first = min(first, static_cast<unsigned long long>(i));
        }
    }
    note_differences(out, count, first);
}

__device__ double warp_sum(double v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void screen_floats_kernel(const float* got, const float* reference, std::size_t n, Counters* non_finite,
                                     double* sums) {
    const Share share = my_share();
    unsigned long long count = 0, first = ~0ull;
    double squared_difference = 0.0, squared_reference = 0.0;
    for (std::size_t i = share.first; i < n; i += share.width) {
        const float g = got[i], r = reference[i];
        if (!isfinite(r)) continue;
        if (!isfinite(g)) {
            ++count;
            first = min(first, static_cast<unsigned long long>(i));
            continue;
        }
        const double d = static_cast<double>(g) - static_cast<double>(r);
        squared_difference += d * d;
        squared_reference += static_cast<double>(r) * static_cast<double>(r);
    }
    note_differences(non_finite, count, first);
    squared_difference = warp_sum(squared_difference);
    squared_reference = warp_sum(squared_reference);
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(&sums[0], squared_difference);
        atomicAdd(&sums[1], squared_reference);
    }
}

__global__ void first_beyond_kernel(const float* got, const float* reference, std::size_t n, double limit,
                                    unsigned long long* first) {
    const Share share = my_share();
    for (std::size_t i = share.first; i < n; i += share.width) {
        if (!(std::fabs(static_cast<double>(got[i]) - static_cast<double>(reference[i])) <= limit)) {
            atomicMin(first, static_cast<unsigned long long>(i));
            return;
        }
    }
}

// A small piece of device memory for a comparison's answer, and its copy back.
template <class T> T run_and_fetch(const T& initial, const std::function<void(T*)>& launch) {
    DeviceBuffer answer(sizeof(T));
    LABKIT_CHECK(cudaMemcpy(answer.data(), &initial, sizeof(T), cudaMemcpyHostToDevice));
    launch(static_cast<T*>(answer.data()));
    LABKIT_CHECK_LAUNCH();
    T host{};
    LABKIT_CHECK(cudaMemcpy(&host, answer.data(), sizeof(T), cudaMemcpyDeviceToHost));
    return host;
}

std::string number_text(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6g", value);
    return buffer;
}

// One element of a device array, for a message.
std::string device_element_text(const void* data, DType dtype, std::uint64_t index) {
    HostArray one;
    one.dtype = dtype;
    one.shape = {1};
    one.bytes.resize(dtype_size(dtype));
    LABKIT_CHECK(cudaMemcpy(one.bytes.data(), static_cast<const std::byte*>(data) + index * dtype_size(dtype),
                            one.bytes.size(), cudaMemcpyDeviceToHost));
    return format_value(element_value(one, 0));  // as the checker writes values
}

}  // namespace

Difference count_unequal(const void* a, const void* b, std::size_t bytes, std::size_t element_bytes) {
    if (bytes == 0) return {};
    const bool aligned = reinterpret_cast<std::uintptr_t>(a) % 16 == 0 && reinterpret_cast<std::uintptr_t>(b) % 16 == 0 &&
                         16 % element_bytes == 0;
    const std::size_t vectors = aligned ? bytes / 16 : 0;
    const Counters found = run_and_fetch<Counters>({0, ~0ull}, [&](Counters* out) {
        count_unequal_kernel<<<kScreenBlocks, kScreenThreads>>>(static_cast<const unsigned char*>(a),
                                                                 static_cast<const unsigned char*>(b), bytes,
                                                                 static_cast<unsigned>(element_bytes), vectors, out);
    });
    return {found.count, found.first};
}

FloatScreen screen_floats(const float* got, const float* reference, std::size_t n) {
    struct Answer {
        Counters non_finite;
        double sums[2];
    };
    const Answer found = run_and_fetch<Answer>({{0, ~0ull}, {0.0, 0.0}}, [&](Answer* out) {
        screen_floats_kernel<<<kScreenBlocks, kScreenThreads>>>(got, reference, n, &out->non_finite, out->sums);
    });
    FloatScreen screen;
    screen.non_finite = {found.non_finite.count, found.non_finite.first};
    screen.rms_difference = n ? std::sqrt(found.sums[0] / static_cast<double>(n)) : 0.0;
    screen.rms_reference = n ? std::sqrt(found.sums[1] / static_cast<double>(n)) : 0.0;
    return screen;
}

std::uint64_t first_beyond(const float* got, const float* reference, std::size_t n, double limit) {
    return run_and_fetch<unsigned long long>(static_cast<unsigned long long>(n), [&](unsigned long long* out) {
        first_beyond_kernel<<<kScreenBlocks, kScreenThreads>>>(got, reference, n, limit, out);
    });
}

namespace {

// The fastest this GPU could possibly run the case: its byte model at the device-to-device
// copy bandwidth measured now, or its FLOP model at the FP32 peak of its SMs, whichever
// takes longer. A time per call below it was not all timed.
struct PhysicalFloor {
    double copy_gbps = 0;
    double fp32_tflops = 0;
    double floor_ms = 0;
};

// FP32 lanes per SM by architecture (the CUDA C++ Programming Guide's throughput table):
// 64 on Volta, Turing and the A100, 128 from the GA10x on. An unknown newer one counts as
// 128, which keeps the floor low (never a false alarm).
int fp32_lanes_per_sm(int cc_major, int cc_minor) {
    if (cc_major < 8 || (cc_major == 8 && cc_minor == 0)) return 64;
    return 128;
}

PhysicalFloor measure_floor(const Problem& problem, const CaseSpec& spec, const DeviceInfo& device, Timer& timer) {
    PhysicalFloor floor;
    const double bytes = problem.bytes_moved(spec);
    const std::size_t half = copy_baseline_half_bytes(bytes);
    {
        DeviceBuffer src(half), dst(half);
        LABKIT_CHECK(cudaMemset(src.data(), 0x3C, half));
        const Timing copy = timer.measure([](int) {}, [&] {
            LABKIT_CHECK(cudaMemcpyAsync(dst.data(), src.data(), half, cudaMemcpyDeviceToDevice));
        }, TimingOptions{3, 10});
        floor.copy_gbps = copy.summary.min > 0 ? 2.0 * static_cast<double>(half) / (copy.summary.min * 1e-3) / 1e9 : 0;
    }
    int clock_khz = 0;
    LABKIT_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device.ordinal));
    floor.fp32_tflops = 2.0 * device.sm_count * fp32_lanes_per_sm(device.cc_major, device.cc_minor) *
                        (static_cast<double>(clock_khz) * 1e3) / 1e12;
    const double flops = problem.flops ? problem.flops(spec) : 0.0;
    const double bytes_ms = floor.copy_gbps > 0 ? bytes / (floor.copy_gbps * 1e6) : 0.0;
    const double flops_ms = floor.fp32_tflops > 0 ? flops / (floor.fp32_tflops * 1e9) : 0.0;
    floor.floor_ms = std::max(bytes_ms, flops_ms);
    return floor;
}

bool exact_output(const OutputSpec& spec) {
    return !spec.computed && spec.tolerance.abs == 0.0 && spec.tolerance.rel == 0.0 && spec.tolerance.ulp <= 0;
}

// The timed case twice over: in the shared arena (what the program computes on) and on the
// auditor's own (where the reference recomputes each sample), and the sealed samples.
class Audit {
public:
    Audit(const Problem& problem, const MakeDeviceRun& make_run, const CaseSpec& spec, Timer& timer, int slots)
        : problem_(problem), spec_(spec), timer_(timer) {
        {
            ArenaPlacement counting;
            CaseOnDevice sizing(problem, make_run, spec);
            layout_bytes_ = counting.used();
        }
        arena_.emplace(SharedArena::create(layout_bytes_));
        {
            ArenaPlacement place(arena_->base(), arena_->bytes());
            shared_ = std::make_unique<CaseOnDevice>(problem, make_run, spec);
            if (place.used() != layout_bytes_) throw std::logic_error("the case laid out differently the second time");
        }
        own_ = std::make_unique<CaseOnDevice>(problem, make_run, spec);
        for (int s = 0; s <= slots; ++s) {  // the last one takes the samples nobody keeps
            std::vector<std::unique_ptr<DeviceArray>> slot;
            for (DeviceArray* out : shared_->run().outputs())
                slot.push_back(std::make_unique<DeviceArray>(out->name(), out->dtype(), out->shape()));
            slots_.push_back(std::move(slot));
        }
    }

    std::size_t layout_bytes() const { return layout_bytes_; }
    const SharedArena& arena() const { return *arena_; }
    int slots() const { return static_cast<int>(slots_.size()) - 1; }

    // The inputs of the next sample, generated from `seed` into the auditor's own case (off
    // the clock: the program cannot see them there); finished on the device.
    void stage(std::uint64_t seed) {
        own_->fill_inputs(seed);
        LABKIT_CHECK(cudaDeviceSynchronize());
    }

    // The staged inputs copied into the shared arena, poisoned outputs, a cold L2; finished
    // on the device. On the clock: whatever else the program's process ran on the GPU now
    // would have to wait for this, and be timed.
    void prepare() {
        const auto& shared_inputs = shared_->inputs();
        const auto& own_inputs = own_->inputs();
        for (std::size_t i = 0; i < own_inputs.size(); ++i)
            if (own_inputs[i]->bytes())
                LABKIT_CHECK(cudaMemcpyAsync(shared_inputs[i]->data(), own_inputs[i]->data(), own_inputs[i]->bytes(),
                                             cudaMemcpyDeviceToDevice));
        shared_->poison_outputs();
        timer_.make_l2_cold();
        LABKIT_CHECK(cudaDeviceSynchronize());
    }

    // The outputs copied into `slot` (-1: the slot nobody keeps); finished on the device.
    void seal(int slot) {
        auto& into = sealed(slot);
        const auto outputs = shared_->run().outputs();
        for (std::size_t i = 0; i < outputs.size(); ++i)
            if (outputs[i]->bytes())
                LABKIT_CHECK(cudaMemcpyAsync(into[i]->data(), outputs[i]->data(), outputs[i]->bytes(),
                                             cudaMemcpyDeviceToDevice));
        LABKIT_CHECK(cudaDeviceSynchronize());
    }

    // What is wrong with the sealed sample in `slot`, made from the staged inputs, in words;
    // "" when nothing is.
    std::string verify(int slot) {
        const auto& shared_inputs = shared_->inputs();
        const auto& own_inputs = own_->inputs();
        for (std::size_t i = 0; i < own_inputs.size(); ++i) {
            const DeviceArray& wrote = *own_inputs[i];
            const Difference changed =
                count_unequal(shared_inputs[i]->data(), wrote.data(), wrote.bytes(), dtype_size(wrote.dtype()));
            if (changed.count)
                return "its input " + wrote.name() + " was changed: " + std::to_string(changed.count) + " of " +
                       std::to_string(wrote.size()) + " elements differ from what the grader wrote (the first at [" +
                       std::to_string(changed.first) + "]); the lab's inputs are read-only";
        }
        own_->poison_outputs();
        own_->fill_workspaces_with_garbage();
        own_->run().run();
        LABKIT_CHECK_LAUNCH();
        LABKIT_CHECK(cudaDeviceSynchronize());
        const auto& outputs = sealed(slot);
        const auto reference = own_->run().outputs();
        for (std::size_t i = 0; i < reference.size(); ++i) {
            std::string wrong = compare(*reference[i], outputs[i]->data());
            if (!wrong.empty()) return wrong;
        }
        return "";
    }

    void dump(const fs::path& folder, int slot) {
        fs::create_directories(folder);
        for (const auto& output : sealed(slot)) write_array(dump_path(folder.string(), spec_, output->name()), output->download());
    }

private:
    // The arrays of sealed slot `slot`; -1 is the slot nobody keeps.
    std::vector<std::unique_ptr<DeviceArray>>& sealed(int slot) {
        return slots_.at(slot < 0 ? slots_.size() - 1 : static_cast<std::size_t>(slot));
    }

    std::string compare(const DeviceArray& reference, const void* got) {
        const OutputSpec& spec = problem_.output(reference.name());
        const std::string name = reference.name();
        if (exact_output(spec) || !dtype_is_float(reference.dtype())) {
            const Difference d = count_unequal(got, reference.data(), reference.bytes(), dtype_size(reference.dtype()));
            if (d.count == 0) return "";
            return name + "[" + std::to_string(d.first) + "] is " + device_element_text(got, reference.dtype(), d.first) +
                   " where the course's reference computes " +
                   device_element_text(reference.data(), reference.dtype(), d.first) + " from the same inputs (" +
                   std::to_string(d.count) + " of " + std::to_string(reference.size()) +
                   " elements differ, and this lab's answer is exact)";
        }
        if (reference.dtype() != DType::f32) return "";  // no float64 output is timed; the checker judges kept ones
        const auto* g = static_cast<const float*>(got);
        const auto* r = reference.get<float>();
        const FloatScreen screen = screen_floats(g, r, reference.size());
        if (screen.non_finite.count)
            return name + "[" + std::to_string(screen.non_finite.first) + "] is " +
                   device_element_text(got, DType::f32, screen.non_finite.first) +
                   ", not a number, where the course's reference computes " +
                   device_element_text(r, DType::f32, screen.non_finite.first) + " (" +
                   std::to_string(screen.non_finite.count) + " of " + std::to_string(reference.size()) +
                   " elements are not finite numbers: outputs left unwritten or computed from garbage)";
        if (reference.size() >= kScreenMinElements && screen.relative() > kScreenRelativeRms) {
            const std::uint64_t at = first_beyond(g, r, reference.size(), kScreenRelativeRms * screen.rms_reference);
            return name + " differs from what the course's reference computes from the same inputs by " +
                   number_text(100.0 * screen.relative()) + " % of its size (RMS), far beyond float rounding (the " +
                   "limit is " + number_text(100.0 * kScreenRelativeRms) + " %); for instance " + name + "[" +
                   std::to_string(at) + "] is " + device_element_text(got, DType::f32, at) + " where the reference has " +
                   device_element_text(r, DType::f32, at);
        }
        return "";
    }

    const Problem& problem_;
    const CaseSpec& spec_;
    Timer& timer_;
    std::size_t layout_bytes_ = 0;
    std::optional<SharedArena> arena_;
    std::unique_ptr<CaseOnDevice> shared_, own_;
    std::vector<std::vector<std::unique_ptr<DeviceArray>>> slots_;
};

// A decimal number of milliseconds as the program wrote it: finite, not negative, the whole word.
std::optional<double> parse_ms(const std::string& text) {
    if (text.empty() || text.size() > 32) return std::nullopt;
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() || !std::isfinite(value) || value < 0) return std::nullopt;
    return value;
}

// A program being timed, as the grader attached it: its pipes, read and written here only,
// its signal page when it answers through one, and whether it is official (the course's
// reference, whose samples are never kept) or a submission.
class Program {
public:
    Program(int to_program, int from_program, int signal_fd, int timeout_ms, bool official)
        : channel_(from_program, to_program), timeout_ms_(timeout_ms), official_(official) {
        if (signal_fd >= 0) {
            page_ = std::make_unique<SignalPage>(signal_fd);
            ::close(signal_fd);
        }
    }
    Program(const Program&) = delete;
    Program& operator=(const Program&) = delete;
    ~Program() {
        ::close(channel_.in());
        ::close(channel_.out());
    }
    LineChannel& channel() { return channel_; }
    SignalPage* page() { return page_.get(); }
    int timeout_ms() const { return timeout_ms_; }
    bool official() const { return official_; }

private:
    LineChannel channel_;
    std::unique_ptr<SignalPage> page_;
    int timeout_ms_;
    bool official_;
};

// What a program answered to one "go": its event time, or that it ended or broke the
// protocol (`what` says how), and when the auditor had its answer.
struct Answer {
    enum class Kind { done, closed, breach } kind = Kind::done;
    double ms = 0;
    std::string what;
    std::chrono::steady_clock::time_point at;
};

// How long the auditor spins before it sleeps on the program's answer (on its signal page
// or its pipe): a spinning reader sees the answer at once, which keeps the sample's end on
// the grader's clock sharp.
constexpr int kAnswerSpinUs = 20000;

// A plain name for an attached program (the grader's word for it).
bool plain_name(const std::string& word) {
    static const std::regex plain("[A-Za-z0-9_-]{1,64}");
    return std::regex_match(word, plain);
}

std::string no_answer_within(const Program& program, const std::string& n) {
    return "gave no answer to 'go " + n + "' within " + number_text(program.timeout_ms() / 1000.0) + " s";
}

// "go N" over the program's pipe, and its "done N MS" line.
Answer ask_by_line(Program& program, const std::string& n) {
    LineChannel& to = program.channel();
    Answer a;
    if (!to.write_line("go " + n)) {
        a.kind = Answer::Kind::closed;
        return a;
    }
    const LineChannel::Read answer = to.read_line(program.timeout_ms(), kAnswerSpinUs);
    a.at = std::chrono::steady_clock::now();
    a.kind = Answer::Kind::breach;
    if (answer.status == LineChannel::Status::closed) {
        a.kind = Answer::Kind::closed;
    } else if (answer.status == LineChannel::Status::timed_out) {
        a.what = no_answer_within(program, n);
    } else if (answer.status != LineChannel::Status::line) {
        a.what = "answered 'go " + n + "' with " +
                 (answer.status == LineChannel::Status::too_long ? std::string("a line longer than any answer")
                                                                 : "'" + quote_for_message(answer.line) + "'") +
                 " instead of 'done " + n + " MS'";
    } else {
        const auto w = split_words(answer.line);
        const auto ms = w.size() == 3 ? parse_ms(w[2]) : std::nullopt;
        if (w.size() != 3 || w[0] != "done" || w[1] != n || !ms || answer.line != "done " + w[1] + " " + w[2]) {
            a.what = "answered 'go " + n + "' with '" + quote_for_message(answer.line) + "' instead of 'done " + n + " MS'";
        } else {
            a.kind = Answer::Kind::done;
            a.ms = *ms;
        }
    }
    return a;
}

// "go" as a ticket on the program's signal page, and its answer there. Its pipe must stay
// silent (only the grader's "end" travels on it, the other way): anything on it, or its end,
// stops the wait.
Answer ask_by_page(Program& program, std::uint64_t number, const std::string& n) {
    LineChannel& to = program.channel();
    SignalPage& page = *program.page();
    const std::uint32_t previous = page.sent();  // on the page as its last answer (checked before 'go')
    const std::uint32_t ticket = page.send_go(number);
    const SignalPage::Wait got =
        page.wait_done(previous, program.timeout_ms(), kAnswerSpinUs, [&] { return to.has_unasked_input(); });
    Answer a;
    a.at = std::chrono::steady_clock::now();
    a.kind = Answer::Kind::breach;
    if (got == SignalPage::Wait::stopped) {
        const std::string said = to.drain_for_message();
        if (said.empty()) a.kind = Answer::Kind::closed;
        else a.what = "wrote '" + said + "' on its control pipe instead of answering 'go " + n + "' through its signal page";
        return a;
    }
    if (got == SignalPage::Wait::timed_out) {
        a.what = no_answer_within(program, n);
        return a;
    }
    const SignalPage::Done done = page.done();
    if (done.ticket != ticket || done.number != number || !std::isfinite(done.ms) || done.ms < 0) {
        a.what = "answered 'go " + n + "' through its signal page with sample " + std::to_string(done.number) +
                 ", ticket " + std::to_string(done.ticket) + " and " + number_text(done.ms) + " ms instead of sample " +
                 n + ", ticket " + std::to_string(ticket) + " and its time in ms";
        return a;
    }
    a.kind = Answer::Kind::done;
    a.ms = done.ms;
    return a;
}

}  // namespace

int run_auditor(const Problem& problem, const MakeDeviceRun& make_run, const CaseSpec& spec, const DeviceInfo& device,
                const AuditOptions& options, Json& json) {
    std::signal(SIGPIPE, SIG_IGN);  // a program that has gone is a 'closed' answer, not the auditor's death
    LineChannel grader(options.control, options.control);
    Timer timer(device);
    const PhysicalFloor floor = measure_floor(problem, spec, device, timer);  // before the case's memory is taken
    Audit audit(problem, make_run, spec, timer, options.slots);
    {
        const int fd = audit.arena().export_fd();
        send_line_with_fds(options.control,
                           "ready " + spec.name + " " + std::to_string(audit.layout_bytes()) + " " +
                               std::to_string(audit.arena().bytes()) + " " + number_text(floor.floor_ms) + " " +
                               number_text(floor.copy_gbps) + " " + number_text(floor.fp32_tflops),
                           {fd});
        ::close(fd);
    }
    Json row{{"name", spec.name}, {"params", params_json(spec)}, {"bytes_moved", problem.bytes_moved(spec)},
             {"copy_gbps", floor.copy_gbps}, {"fp32_tflops", floor.fp32_tflops}, {"floor_ms", floor.floor_ms},
             {"arena_bytes", audit.arena().bytes()}, {"slots", audit.slots()}};
    std::uint64_t samples = 0, verified = 0, differed = 0, breaches = 0;
    std::map<std::string, std::unique_ptr<Program>> programs;
    bool staged = false;
    auto say = [&](const std::string& line) {
        if (!grader.write_line(line)) throw UsageError("the grader went away");
    };
    for (;;) {
        std::vector<int> fds;
        const LineChannel::Read got = grader.read_line_with_fds(-1, fds);
        if (got.status == LineChannel::Status::closed) break;  // the grader ended: nothing more to do
        if (got.status != LineChannel::Status::line) throw UsageError("an unreadable control line from the grader");
        const auto w = split_words(got.line);
        const std::string verb = w.empty() ? "" : w[0];
        if (verb == "attach" && w.size() == 4 && (fds.size() == 2 || fds.size() == 3) && plain_name(w[1]) &&
            (w[3] == "official" || w[3] == "student")) {
            // A third descriptor: the program's signal page (it said so in its ready line).
            programs[w[1]] = std::make_unique<Program>(fds[0], fds[1], fds.size() == 3 ? fds[2] : -1,
                                                       static_cast<int>(parse_u64(w[2], "attach's timeout")),
                                                       w[3] == "official");
            say("attached " + w[1]);
            continue;
        }
        for (const int fd : fds) ::close(fd);
        if (verb == "detach" && w.size() == 2) {
            programs.erase(w[1]);
            say("detached " + w[1]);
        } else if (verb == "stage" && w.size() == 2) {
            audit.stage(parse_u64(w[1], "stage seed"));
            staged = true;
            say("staged");
        } else if (verb == "sample" && w.size() == 4) {
            const std::string& n = w[1];
            const std::uint64_t number = parse_u64(n, "sample number");
            const std::string& name = w[2];
            const int slot = std::stoi(w[3]);
            const auto found = programs.find(name);
            if (found == programs.end()) throw UsageError("'sample' for '" + quote_for_message(name) + "', not attached");
            Program& program = *found->second;
            if (slot < -1 || slot >= audit.slots() || (slot >= 0 && program.official()))
                throw UsageError("no slot " + w[3] + " for " + name);
            if (!staged) throw UsageError("'sample' before 'stage'");
            staged = false;
            ++samples;
            LineChannel& to = program.channel();
            auto breach = [&](const std::string& what) {
                ++breaches;
                programs.erase(name);
                say("breach " + n + " " + name + " " + what);
            };
            auto closed = [&] {
                programs.erase(name);
                say("closed " + n + " " + name);
            };
            if (to.has_unasked_input()) {
                const std::string said = to.drain_for_message();
                if (said.empty()) closed();
                else breach("wrote '" + said + "' before it was asked for anything");
                continue;
            }
            if (program.page() != nullptr && program.page()->done().ticket != program.page()->sent()) {
                breach("wrote an answer on its signal page before it was asked for anything");
                continue;
            }
            // The auditor's own clock (steady, in this official process) splits the sample's
            // window into preparation, the program's answer and the seal: the grader scores the
            // whole window, whose edges the program cannot move.
            const auto prepare_from = std::chrono::steady_clock::now();
            audit.prepare();
            const auto go_at = std::chrono::steady_clock::now();
            const Answer answer = program.page() != nullptr ? ask_by_page(program, number, n) : ask_by_line(program, n);
            if (answer.kind == Answer::Kind::closed) {
                closed();
                continue;
            }
            if (answer.kind == Answer::Kind::breach) {
                breach(answer.what);
                continue;
            }
            const auto answered_at = answer.at;
            audit.seal(slot);
            const auto sealed_at = std::chrono::steady_clock::now();
            if (to.has_unasked_input()) {  // after the clock: anything more it said is a breach
                const std::string more = to.drain_for_message();
                if (!more.empty()) {
                    breach("wrote '" + more + "' after its answer to 'go " + n + "'");
                    continue;
                }
            }
            auto ns = [](auto span) {
                return std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(span).count());
            };
            say("sealed " + n + " " + number_text(answer.ms) + " " + ns(go_at - prepare_from) + " " +
                ns(answered_at - go_at) + " " + ns(sealed_at - answered_at));
            // Every timed sample is verified, the reference's too: the work and the pause
            // after a sample are then the same for the reference and the submission, so each
            // is as often the one after it. Verifying only the submission's put that pause
            // before a reference sample four times as often as before its own, and the same
            // code measured 2 to 3 % faster as a submission than as the reference.
            const std::string wrong = audit.verify(slot);
            if (wrong.empty()) {
                ++verified;
                say("verified " + n);
            } else {
                ++differed;
                say("differs " + n + " " + quote_for_message(wrong, LineChannel::kMaxLine - 64));
            }
        } else if (verb == "dump" && w.size() == 3) {
            const int slot = std::stoi(w[2]);
            if (!plain_name(w[1]) || slot < 0 || slot >= audit.slots())
                throw UsageError("bad dump request '" + quote_for_message(got.line) + "'");
            audit.dump(fs::path(options.dump_dir) / w[1], slot);
            say("dumped " + w[1]);
        } else if (verb == "end" && w.size() == 1) {
            break;
        } else {
            throw UsageError("unexpected control line from the grader: '" + quote_for_message(got.line) + "'");
        }
    }
    row.update(Json{{"samples", samples}, {"verified", verified}, {"differed", differed}, {"breaches", breaches}});
    json["bench"] = Json::array({row});
    json["status"] = "unchecked";
    return kExitPassed;
}

}  // namespace labkit
