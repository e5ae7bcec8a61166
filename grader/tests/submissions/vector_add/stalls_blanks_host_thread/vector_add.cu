// Attack: a host thread of the program's own that notices blank samples and stalls them,
// with the work on a stream that the harness's events do not wait for.
//
// The work: vector_add is correct, but every call adds the whole array kPasses = 6 times
// (each pass writes the same right answer), so a call really takes about 6 times the
// reference's time (1.6 ms against about 0.27 ms on an H100 at n = 2^26): twice the
// zero-marks ratio of 3.
//
// The event-time forgery: the six passes are one kernel on a cudaStreamNonBlocking stream
// of the greatest priority, made to wait (an event) for the harness's input generation on
// the legacy default stream. The harness's stop event is recorded on the legacy stream,
// which never waits for a non-blocking stream, so the events time only a one-warp kernel
// that vector_add leaves on the legacy stream: it waits until every block of the work is
// resident, a few microseconds. The work kernel is a persistent grid of 9 blocks of 224
// threads per SM: 63 of an H100's 64 warp slots, so no 256-thread block of the harness's
// output hash fits beside it until it ends, and it ends all at once (its blocks wait for
// each other after their last pass), so the hash reads the finished answer. The hash and
// the 'done' line therefore come after all six passes: the grader's clock sees them.
//
// The blank-sample forgery: in a paced run the first call starts a thread that reads the
// harness thread's own I/O counters (/proc/self/task/<pid>/io, "rchar") without pause. A
// control line of 40 characters or more read by the harness is a 'sample' line ('drop',
// 'keep' and 'end' are 5 or fewer). From then on the thread gives the sample as long as
// vector_add took to be called in the recent timed samples (their median), plus 40 us:
// the preparation time; if vector_add has not been called by then, the sample is blank,
// and unless the harness has written its 'done' already ("wchar": too late, the stall
// would land on the next sample) the thread launches, on a stream of its own of the
// greatest priority, a grid that fills every warp slot of every SM and spins for 1.5
// times the work's last duration plus 50 us (or until vector_add is called after all,
// read from mapped host memory). The blank sample's remaining generation, L2 flush and
// hashing cannot start before it ends, so neither can its 'done'. The correctness run
// has no control pipes (no --paced): no thread there.
//
// Why it scores with a grader that trusts the program's own timing: blank samples now
// last longer than timed ones, so timed less blank is below zero and counts as 0 ms; the
// cross-check finds no disagreement with the reported event median (about 0.01 ms) and
// scores that: full speed points. The kept timed sample's hash is taken after all six
// passes, so its dump agrees and the checker passes it.
//
// Why it scores nothing once time is taken outside the process: a measurement that
// counts the GPU time each call causes, in samples the program cannot tell apart, sees
// six passes per call: about 6 times the reference.
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr int kPasses = 6;
constexpr int kWorkThreads = 224;       // 7 warps
constexpr int kWorkBlocksPerSm = 9;     // 63 of an H100's 64 warp slots: one is left for the gate
constexpr int kHoldThreads = 256;
constexpr unsigned long long kHoldExtraNs = 50'000;
// 'sample N SEED KEY KIND\n' is 50 to 74 characters (a 32-digit key, a seed of up to 20),
// 'drop\n' and 'keep\n' are 5: one sample line, with or without a decision before it.
constexpr long long kShortestSampleLine = 40;
constexpr long long kTwoSampleLines = 100;
constexpr long long kPreparationMarginNs = 40'000;

struct Progress {
    unsigned long long arrived;           // blocks of the work kernel that have started, all calls together
    unsigned long long finished;          // blocks that have written their share of every pass
    unsigned long long first_arrival_ns;  // this call's, on the GPU's clock
    unsigned long long last_finish_ns;
    unsigned long long released;          // the number of the last hold that vector_add's call ended
};

__device__ unsigned long long gpu_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ unsigned long long volatile_read(const unsigned long long* p) {
    return *static_cast<const volatile unsigned long long*>(p);
}

// Every pass writes c = a + b over all of c; `target` is this call's number times the grid.
__global__ void __launch_bounds__(kWorkThreads, kWorkBlocksPerSm)
    add_passes_holding_every_sm(const float* a, const float* b, float* c, std::size_t n, std::size_t groups,
                                int passes, Progress* progress, unsigned long long target) {
    if (threadIdx.x == 0) {
        const unsigned long long before = atomicAdd(&progress->arrived, 1ULL);
        if (before + gridDim.x == target) progress->first_arrival_ns = gpu_ns();
    }
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const std::size_t id = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const auto* a4 = reinterpret_cast<const float4*>(a);
    const auto* b4 = reinterpret_cast<const float4*>(b);
    auto* c4 = reinterpret_cast<float4*>(c);
    for (int pass = 0; pass < passes; ++pass) {
        for (std::size_t g = id; g < groups; g += stride) {
            const float4 x = a4[g], y = b4[g];
            c4[g] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
        }
        for (std::size_t i = 4 * groups + id; i < n; i += stride) c[i] = a[i] + b[i];
        asm volatile("" ::: "memory");  // each pass reads and writes memory again
    }
    // No block leaves, and frees its warp slots, before every block has written its share.
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(&progress->finished, 1ULL) + 1 == target) progress->last_finish_ns = gpu_ns();
        while (volatile_read(&progress->finished) < target) __nanosleep(256);
    }
    __syncthreads();
}

// On the legacy stream, between the harness's events: returns once the work is resident.
__global__ void wait_until_work_resident(const Progress* progress, unsigned long long target) {
    while (volatile_read(&progress->arrived) < target) __nanosleep(64);
}

// Every warp slot of every SM for 1.5 times the work's last duration, unless vector_add
// is called meanwhile (host_calls, mapped host memory, moves past calls_seen: the thread
// took a timed sample for a blank one). Block 0 watches the host; the others watch it.
__global__ void __launch_bounds__(kHoldThreads)
    hold_every_sm(Progress* progress, const volatile unsigned long long* host_calls, unsigned long long calls_seen,
                  unsigned long long hold) {
    if (threadIdx.x == 0) {
        const unsigned long long work_ns = progress->last_finish_ns - progress->first_arrival_ns;
        const unsigned long long until = gpu_ns() + work_ns + work_ns / 2 + kHoldExtraNs;
        while (gpu_ns() < until) {
            if (blockIdx.x == 0 && *host_calls != calls_seen) {
                atomicMax(&progress->released, hold);
                break;
            }
            if (volatile_read(&progress->released) >= hold) break;
            __nanosleep(1000);
        }
    }
    __syncthreads();
}

long long host_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<long long>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

bool paced_run() {
    FILE* f = std::fopen("/proc/self/cmdline", "rb");
    if (f == nullptr) return false;
    std::string all;
    char chunk[4096];
    for (std::size_t got; (got = std::fread(chunk, 1, sizeof chunk, f)) > 0;) all.append(chunk, got);
    std::fclose(f);
    for (std::size_t at = 0; at < all.size();) {
        const std::size_t end = std::min(all.find('\0', at), all.size());
        if (all.compare(at, end - at, "--paced") == 0) return true;
        at = end + 1;
    }
    return false;
}

struct Work {
    cudaStream_t stream = nullptr;        // the work: non-blocking, greatest priority
    cudaStream_t hold_stream = nullptr;   // the thread's holds: the same
    cudaEvent_t inputs_ready = nullptr;   // recorded on the legacy stream at the call
    Progress* progress = nullptr;
    volatile unsigned long long* host_calls = nullptr;         // mapped: what hold_every_sm watches
    const volatile unsigned long long* device_calls = nullptr; // its device address
    unsigned grid = 0, hold_grid = 0;
    unsigned long long calls = 0;
    int device = 0;
    bool paced = false;
};

Work* g_work = nullptr;
std::atomic<unsigned long long> g_calls{0};    // calls of vector_add, for the thread
std::atomic<long long> g_last_call_ns{0};      // host time of the last call

// The harness thread's characters read and written (rchar, wchar: what its read() and
// write() calls moved, the control pipes' lines included); false when unreadable.
struct Characters {
    long long read = 0, written = 0;
};

bool characters(int io_fd, Characters& c) {
    char text[512];
    const ssize_t got = ::pread(io_fd, text, sizeof text - 1, 0);
    if (got <= 0) return false;
    text[got] = '\0';
    const char* read = std::strstr(text, "rchar:");
    const char* written = std::strstr(text, "wchar:");
    if (read == nullptr || written == nullptr) return false;
    c.read = std::strtoll(read + 6, nullptr, 10);
    c.written = std::strtoll(written + 6, nullptr, 10);
    return true;
}

void* stall_blank_samples(void*) {
    Work& w = *g_work;
    if (cudaSetDevice(w.device) != cudaSuccess) return nullptr;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/io", static_cast<int>(::getpid()));
    const int io_fd = ::open(path, O_RDONLY | O_CLOEXEC);
    Characters before, now;
    if (io_fd < 0 || !characters(io_fd, before)) return nullptr;
    unsigned long long calls_seen = g_calls.load();
    long long call_delays_ns[16] = {};
    int delays = 0;
    unsigned long long holds = 0;
    while (characters(io_fd, now)) {
        // One sample line (and perhaps a 'drop' or 'keep') since the last look: a sample has
        // just begun. (Two or more: this thread was not running for a whole sample, and
        // cannot tell where the harness is.)
        const long long line = now.read - before.read;
        if (line >= kShortestSampleLine && line < kTwoSampleLines) {
            // Give it the time a timed sample takes to call the code under test.
            const Characters at_line = now;
            const long long read_at = host_ns();
            long long grace = 300'000;
            if (delays > 0) {
                long long sorted[16];
                const int count = std::min(delays, 16);
                std::copy(call_delays_ns, call_delays_ns + count, sorted);
                std::nth_element(sorted, sorted + count / 2, sorted + count);
                grace = std::clamp(sorted[count / 2] + kPreparationMarginNs, 60'000LL, 2'000'000LL);
            }
            while (g_calls.load() == calls_seen && host_ns() < read_at + grace) {
            }
            const unsigned long long calls = g_calls.load();
            if (calls != calls_seen) {
                call_delays_ns[delays++ % 16] = std::max(0LL, g_last_call_ns.load() - read_at);
            } else if (characters(io_fd, now) && now.written == at_line.written) {
                // A blank sample whose 'done' has not been written yet: hold it up.
                hold_every_sm<<<w.hold_grid, kHoldThreads, 0, w.hold_stream>>>(w.progress, w.device_calls, calls_seen,
                                                                               ++holds);
                (void)cudaGetLastError();
            }
            calls_seen = calls;
        }
        before = now;
    }
    return nullptr;
}

Work& work() {
    static Work w = [] {
        Work made;
        int device = 0, sms = 0, least = 0, greatest = 0, per_sm = 0, hold_per_sm = 0;
        LABKIT_CHECK(cudaGetDevice(&device));
        LABKIT_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        LABKIT_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        LABKIT_CHECK(cudaStreamCreateWithPriority(&made.stream, cudaStreamNonBlocking, greatest));
        LABKIT_CHECK(cudaStreamCreateWithPriority(&made.hold_stream, cudaStreamNonBlocking, greatest));
        LABKIT_CHECK(cudaEventCreateWithFlags(&made.inputs_ready, cudaEventDisableTiming));
        LABKIT_CHECK(cudaMalloc(&made.progress, sizeof(Progress)));
        LABKIT_CHECK(cudaMemset(made.progress, 0, sizeof(Progress)));
        void* mapped = nullptr;
        void* mapped_on_device = nullptr;
        LABKIT_CHECK(cudaHostAlloc(&mapped, sizeof(unsigned long long), cudaHostAllocMapped));
        LABKIT_CHECK(cudaHostGetDevicePointer(&mapped_on_device, mapped, 0));
        made.host_calls = static_cast<volatile unsigned long long*>(mapped);
        *made.host_calls = 0;
        made.device_calls = static_cast<const volatile unsigned long long*>(mapped_on_device);
        LABKIT_CHECK(cudaDeviceSynchronize());
        LABKIT_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, add_passes_holding_every_sm,
                                                                   kWorkThreads, 0));
        LABKIT_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&hold_per_sm, hold_every_sm, kHoldThreads, 0));
        made.grid = static_cast<unsigned>(std::max(1, sms * per_sm));
        made.hold_grid = static_cast<unsigned>(std::max(1, sms * hold_per_sm));
        made.device = device;
        made.paced = paced_run();
        return made;
    }();
    return w;
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    Work& w = work();
    g_last_call_ns.store(host_ns());
    const unsigned long long calls = g_calls.fetch_add(1) + 1;
    *w.host_calls = calls;
    if (calls == 1 && w.paced) {
        g_work = &w;
        pthread_t thread;
        if (pthread_create(&thread, nullptr, stall_blank_samples, nullptr) == 0) pthread_detach(thread);
    }
    const unsigned long long target = ++w.calls * w.grid;
    const auto aligned16 = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
    const bool aligned = aligned16(a) && aligned16(b) && aligned16(c);
    LABKIT_CHECK(cudaEventRecord(w.inputs_ready, cudaStreamLegacy));
    LABKIT_CHECK(cudaStreamWaitEvent(w.stream, w.inputs_ready, 0));
    add_passes_holding_every_sm<<<w.grid, kWorkThreads, 0, w.stream>>>(a, b, c, n, aligned ? n / 4 : 0, kPasses,
                                                                       w.progress, target);
    LABKIT_CHECK_LAUNCH();
    wait_until_work_resident<<<1, 1, 0, cudaStreamLegacy>>>(w.progress, target);
    LABKIT_CHECK_LAUNCH();
}
