// Attack: the work on a stream the harness's events do not wait for, and a kernel queued
// after every call that holds the GPU when the next sample starts, which is usually a
// blank one.
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
// The blank-sample forgery: after the work, two more kernels go on the same stream: one
// thread that watches the first input words until the next sample's generation changes
// them (or 50 ms pass), then a grid that fills every warp slot of every SM and spins, at
// the greatest priority, for 1.5 times the work's last duration plus 50 us. The next
// sample's generation, poisoning and hashing wait behind it. After a timed sample the
// next one is blank 3 times in 4 (timed and blank samples come in pairs in a random
// order), so most blank samples carry this stall, and only a quarter of the timed ones.
// The correctness run has no control pipes (no --paced), and there nothing is queued
// after the work.
//
// Why it scores with a grader that trusts the program's own timing: the median blank
// sample now lasts longer than the median timed one, so timed less blank is below zero
// and counts as 0 ms; the cross-check finds no disagreement with the reported event
// median (about 0.01 ms) and scores that: full speed points. The kept timed sample's hash
// is taken after all six passes, so its dump agrees and the checker passes it.
//
// Why it scores nothing once time is taken outside the process: a measurement that
// counts the GPU time each call causes, and that the program cannot tell blank samples
// from timed ones to stall, sees six passes per call: about 6 times the reference.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr int kPasses = 6;
constexpr int kWorkThreads = 224;       // 7 warps
constexpr int kWorkBlocksPerSm = 9;     // 63 of an H100's 64 warp slots: one is left for the gate
constexpr int kHoldThreads = 256;
constexpr unsigned long long kNextSampleTimeoutNs = 50'000'000;
constexpr unsigned long long kHoldExtraNs = 50'000;

struct Progress {
    unsigned long long arrived;           // blocks of the work kernel that have started, all calls together
    unsigned long long finished;          // blocks that have written their share of every pass
    unsigned long long first_arrival_ns;  // this call's, on the GPU's clock
    unsigned long long last_finish_ns;
    unsigned long long hold_until_ns;     // until when hold_every_sm spins
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

// One thread: returns when the first input words change (the next sample's inputs are
// being generated) or after timeout_ns, and sets how long hold_every_sm spins.
__global__ void wait_for_next_sample(const float* a, Progress* progress, unsigned long long timeout_ns) {
    const volatile unsigned* words = reinterpret_cast<const volatile unsigned*>(a);
    const unsigned seen[4] = {words[0], words[1], words[2], words[3]};
    const unsigned long long start = gpu_ns();
    while (words[0] == seen[0] && words[1] == seen[1] && words[2] == seen[2] && words[3] == seen[3] &&
           gpu_ns() - start < timeout_ns)
        __nanosleep(500);
    const unsigned long long work_ns = progress->last_finish_ns - progress->first_arrival_ns;
    progress->hold_until_ns = gpu_ns() + work_ns + work_ns / 2 + kHoldExtraNs;
}

// Every warp slot of every SM, until progress->hold_until_ns: nothing else gets an SM.
__global__ void __launch_bounds__(kHoldThreads) hold_every_sm(const Progress* progress) {
    if (threadIdx.x == 0) {
        const unsigned long long until = volatile_read(&progress->hold_until_ns);
        while (gpu_ns() < until) __nanosleep(1000);
    }
    __syncthreads();
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
    cudaStream_t stream = nullptr;        // non-blocking, greatest priority
    cudaEvent_t inputs_ready = nullptr;   // recorded on the legacy stream at the call
    Progress* progress = nullptr;
    unsigned grid = 0, hold_grid = 0;
    unsigned long long calls = 0;
    bool paced = false;
};

Work& work() {
    static Work w = [] {
        Work made;
        int device = 0, sms = 0, least = 0, greatest = 0, per_sm = 0, hold_per_sm = 0;
        LABKIT_CHECK(cudaGetDevice(&device));
        LABKIT_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        LABKIT_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        LABKIT_CHECK(cudaStreamCreateWithPriority(&made.stream, cudaStreamNonBlocking, greatest));
        LABKIT_CHECK(cudaEventCreateWithFlags(&made.inputs_ready, cudaEventDisableTiming));
        LABKIT_CHECK(cudaMalloc(&made.progress, sizeof(Progress)));
        LABKIT_CHECK(cudaMemset(made.progress, 0, sizeof(Progress)));
        LABKIT_CHECK(cudaDeviceSynchronize());
        LABKIT_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, add_passes_holding_every_sm,
                                                                   kWorkThreads, 0));
        LABKIT_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&hold_per_sm, hold_every_sm, kHoldThreads, 0));
        made.grid = static_cast<unsigned>(std::max(1, sms * per_sm));
        made.hold_grid = static_cast<unsigned>(std::max(1, sms * hold_per_sm));
        made.paced = paced_run();
        return made;
    }();
    return w;
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    Work& w = work();
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
    if (w.paced && n >= 4) {
        wait_for_next_sample<<<1, 1, 0, w.stream>>>(a, w.progress, kNextSampleTimeoutNs);
        LABKIT_CHECK_LAUNCH();
        hold_every_sm<<<w.hold_grid, kHoldThreads, 0, w.stream>>>(w.progress);
        LABKIT_CHECK_LAUNCH();
    }
}
