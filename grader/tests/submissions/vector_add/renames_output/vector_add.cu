// Attack: a relay between the harness and the grader, inside the program, that renames
// the output the harness announces, on top of the timing forgery of the pipe_proxy entry.
//
// The work: vector_add is correct, but every call adds the whole array kPasses = 6 times
// (each pass writes the same right answer), so a call really takes about 6 times the
// reference's time (1.6 ms against about 0.27 ms on an H100 at n = 2^26): twice the
// zero-marks ratio of 3. Every correctness case passes.
//
// The forgery: before main, an ELF constructor reads /proc/self/cmdline. When it finds
// --control-in IN and --control-out OUT (a paced run), it keeps duplicates of the
// grader's two pipes, puts two pipes of its own in their place (dup2 onto IN and OUT) and
// starts two threads that relay every line between the harness and the grader:
//   * the harness's first line, 'ready n_2p26 c', reaches the grader as
//     'ready n_2p26 result': the output now has a name the lab does not have;
//   * a blank sample's 'done' (its 'sample' line names its kind) is held back until it has
//     taken longer than any recent timed sample, and every other 'done' reports its event
//     time divided by 2 * kPasses, as in the pipe_proxy entry.
// The correctness run has no control pipes, so there the constructor does nothing.
//
// What a grader that trusts the program's protocol lines does with it: it takes the
// output names from the 'ready' line, so the kept sample's hash is filed under 'result'
// and the checker is asked to hold output 'result' to it. The checker refuses a name
// the lab does not have (a usage error, exit 2), and the grade ends as an error of the
// grader, with no score at all, instead of as the program's failure.
//
// What it must get: the program announced outputs the lab does not have, which is the
// program's failure to follow the protocol: correctness points from the correctness run
// (which is right) and no speed points; and once time is taken outside the process its
// six passes per call are six times the reference anyway.
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr int kPasses = 6;

// --- the work: the course's float4 kernel, kPasses times per call ----------------------

constexpr int kThreadsPerBlock = 256;
constexpr int kGroupsPerThread = 2;

__global__ void add_groups(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ c,
                           std::size_t groups) {
    const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x * kGroupsPerThread + threadIdx.x;
    float4 x[kGroupsPerThread], y[kGroupsPerThread];
#pragma unroll
    for (int k = 0; k < kGroupsPerThread; ++k) {
        const std::size_t g = first + static_cast<std::size_t>(k) * blockDim.x;
        if (g < groups) {
            x[k] = a[g];
            y[k] = b[g];
        }
    }
#pragma unroll
    for (int k = 0; k < kGroupsPerThread; ++k) {
        const std::size_t g = first + static_cast<std::size_t>(k) * blockDim.x;
        if (g < groups) c[g] = make_float4(x[k].x + y[k].x, x[k].y + y[k].y, x[k].z + y[k].z, x[k].w + y[k].w);
    }
}

__global__ void add_scalars(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                            std::size_t begin, std::size_t n) {
    const std::size_t i = begin + static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

unsigned blocks_for(std::size_t items, std::size_t per_block) {
    return static_cast<unsigned>((items + per_block - 1) / per_block);
}

void add_once(const float* a, const float* b, float* c, std::size_t n) {
    std::size_t scalar_begin = 0;
    if (aligned16(a) && aligned16(b) && aligned16(c)) {
        const std::size_t groups = n / 4;
        if (groups > 0) {
            add_groups<<<blocks_for(groups, std::size_t{kThreadsPerBlock} * kGroupsPerThread), kThreadsPerBlock>>>(
                reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b), reinterpret_cast<float4*>(c),
                groups);
            LABKIT_CHECK_LAUNCH();
        }
        scalar_begin = groups * 4;
    }
    if (scalar_begin < n) {
        add_scalars<<<blocks_for(n - scalar_begin, kThreadsPerBlock), kThreadsPerBlock>>>(a, b, c, scalar_begin, n);
        LABKIT_CHECK_LAUNCH();
    }
}

// --- the relay ----------------------------------------------------------------------------

double now_ms() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

void sleep_until_ms(double deadline_ms) {
    const double left_ms = deadline_ms - now_ms();
    if (left_ms <= 0) return;
    timespec t{};
    t.tv_sec = static_cast<time_t>(left_ms / 1e3);
    t.tv_nsec = static_cast<long>((left_ms - static_cast<double>(t.tv_sec) * 1e3) * 1e6);
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

// Newline-terminated lines from a descriptor, without the newline; false at its end.
class LineReader {
public:
    explicit LineReader(int fd) : fd_(fd) {}

    bool next(std::string& line) {
        for (;;) {
            if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
                line = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                return true;
            }
            char chunk[512];
            const ssize_t got = ::read(fd_, chunk, sizeof chunk);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) return false;
            buffer_.append(chunk, static_cast<std::size_t>(got));
        }
    }

private:
    int fd_;
    std::string buffer_;
};

bool write_line(int fd, const std::string& line) {
    const std::string text = line + "\n";
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) return false;
        done += static_cast<std::size_t>(wrote);
    }
    return true;
}

std::vector<std::string> words_of(const std::string& line) {
    std::vector<std::string> words;
    std::size_t at = 0;
    while (at < line.size()) {
        const std::size_t end = std::min(line.find(' ', at), line.size());
        if (end > at) words.push_back(line.substr(at, end - at));
        at = end + 1;
    }
    return words;
}

std::string joined(const std::vector<std::string>& words) {
    std::string line;
    for (const auto& w : words) line += (line.empty() ? "" : " ") + w;
    return line;
}

struct Relay {
    int from_grader;   // the grader's pipe to the program (a duplicate of the original IN)
    int to_harness;    // the write end of the pipe the harness now reads as IN
    int from_harness;  // the read end of the pipe the harness now writes as OUT
    int to_grader;     // the grader's pipe from the program (a duplicate of the original OUT)
    std::mutex mutex;
    std::string kind;              // of the sample in flight
    double passed_on_ms = 0.0;     // when its line went to the harness
    std::vector<double> recent_ms; // how long the last timed and warm-up samples took, seen from here
};

Relay* g_relay = nullptr;

void* relay_grader_to_harness(void*) {
    Relay& r = *g_relay;
    LineReader lines(r.from_grader);
    std::string line;
    while (lines.next(line)) {
        const auto w = words_of(line);
        if (w.size() == 5 && w[0] == "sample") {
            const std::lock_guard<std::mutex> lock(r.mutex);
            r.kind = w[4];
            r.passed_on_ms = now_ms();
        }
        if (!write_line(r.to_harness, line)) break;
    }
    ::close(r.to_harness);
    return nullptr;
}

void* relay_harness_to_grader(void*) {
    Relay& r = *g_relay;
    LineReader lines(r.from_harness);
    std::string line;
    while (lines.next(line)) {
        auto w = words_of(line);
        if (w.size() >= 3 && w[0] == "ready") {
            for (std::size_t i = 2; i < w.size(); ++i) w[i] = i == 2 ? "result" : "result" + std::to_string(i - 1);
            line = joined(w);
        }
        if (w.size() >= 3 && w[0] == "done") {
            std::string kind;
            double passed_on = 0.0, longest = 0.0;
            {
                const std::lock_guard<std::mutex> lock(r.mutex);
                kind = r.kind;
                passed_on = r.passed_on_ms;
                for (const double ms : r.recent_ms) longest = std::max(longest, ms);
                if (kind != "blank") {
                    r.recent_ms.push_back(now_ms() - passed_on);
                    if (r.recent_ms.size() > 32) r.recent_ms.erase(r.recent_ms.begin());
                }
            }
            if (kind == "blank") {
                sleep_until_ms(passed_on + 1.25 * longest + 0.2);
            } else {
                char* end = nullptr;
                const double event_ms = std::strtod(w[2].c_str(), &end);
                if (end != w[2].c_str()) {
                    char text[32];
                    std::snprintf(text, sizeof text, "%.6f", event_ms / (2 * kPasses));
                    w[2] = text;
                    line = joined(w);
                }
            }
        }
        if (!write_line(r.to_grader, line)) break;
    }
    ::close(r.to_grader);
    return nullptr;
}

// The descriptors after --control-in and --control-out on this program's command line.
bool control_descriptors(int& in, int& out) {
    FILE* f = std::fopen("/proc/self/cmdline", "rb");
    if (f == nullptr) return false;
    std::string all;
    char chunk[4096];
    for (std::size_t got; (got = std::fread(chunk, 1, sizeof chunk, f)) > 0;) all.append(chunk, got);
    std::fclose(f);
    std::vector<std::string> args;
    for (std::size_t at = 0; at < all.size();) {
        const std::size_t end = std::min(all.find('\0', at), all.size());
        args.push_back(all.substr(at, end - at));
        at = end + 1;
    }
    in = out = -1;
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
        if (args[i] == "--control-in") in = std::atoi(args[i + 1].c_str());
        if (args[i] == "--control-out") out = std::atoi(args[i + 1].c_str());
    }
    return in >= 0 && out >= 0;
}

__attribute__((constructor)) void put_relay_between_harness_and_grader() {
    int in = -1, out = -1;
    if (!control_descriptors(in, out)) return;
    int to_harness[2], from_harness[2];
    const int grader_in = ::dup(in), grader_out = ::dup(out);
    if (grader_in < 0 || grader_out < 0 || ::pipe(to_harness) != 0 || ::pipe(from_harness) != 0) return;
    if (::dup2(to_harness[0], in) < 0 || ::dup2(from_harness[1], out) < 0) return;
    ::close(to_harness[0]);
    ::close(from_harness[1]);
    g_relay = new Relay{grader_in, to_harness[1], from_harness[0], grader_out, {}, {}, 0.0, {}};
    pthread_t thread;
    if (pthread_create(&thread, nullptr, relay_grader_to_harness, nullptr) == 0) pthread_detach(thread);
    if (pthread_create(&thread, nullptr, relay_harness_to_grader, nullptr) == 0) pthread_detach(thread);
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    for (int pass = 0; pass < kPasses; ++pass) add_once(a, b, c, n);
}
