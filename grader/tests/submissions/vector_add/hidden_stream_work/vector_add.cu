// Attack: most of the work on a stream of its own, which the harness's CUDA events and
// the grader's clock do not wait for.
//
// The work: vector_add is correct, but every call adds the whole array kPasses = 6 times,
// so a call really takes about 6 times the reference's time (1.6 ms of GPU work against
// about 0.27 ms on an H100 at n = 2^26): twice the zero-marks ratio of 3.
//
// The forgery: the first pass runs where the harness expects it, on the legacy default
// stream between the harness's events (the course's float4 kernel: about the reference's
// time), and writes c. The other five compute the same sum in full into a buffer of the
// program's own, on a cudaStreamNonBlocking stream made to wait for the first pass. The
// legacy stream never waits for a non-blocking stream, so the harness's stop event, its
// hashing of c and its 'done' line go ahead while they run; they end during what the
// harness does next: the next sample's input generation and hashing, and after a timed
// sample the next one is blank 3 times in 4. (The hidden passes do not write c: the next
// sample's inputs are generated while they run, and from those half-new inputs they
// would write wrong sums into the next sample's c.)
//
// Why the hashes agree: c is final when the first pass ends, before the stop event, so
// the harness hashes the right answer, and when the grader keeps the sample the dump
// (after the harness synchronises the device) holds the same bytes: the kept sample
// passes the checker. With all six passes hidden, the event time would be near zero, but
// the hash would then race with the pass that writes c and read poison: the kept sample's
// dump would not match its hash and would be judged inconsistent, losing the speed points;
// and making the hash wait for the work puts the work back on the grader's clock.
//
// Why it scores with a grader that trusts the program's own timing: the reported event
// time is one pass, about the reference's time, a little more where hidden passes of the
// last timed sample are still running beside it. The grader's clock (timed less blank
// samples) sees about as much, because the hidden passes slow down the samples after a
// timed one, which are mostly blank. The cross-check finds the two in agreement, or
// scores the clock, which is not much longer: a ratio near 1, speed points.
//
// Why it scores nothing once time is taken outside the process: a measurement that
// counts the GPU work each call causes, wherever it runs and whenever it ends, sees six
// passes per call: about 6 times the reference.
#include <cstdint>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr int kPasses = 6;

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

void add_once(const float* a, const float* b, float* c, std::size_t n, cudaStream_t stream) {
    std::size_t scalar_begin = 0;
    if (aligned16(a) && aligned16(b) && aligned16(c)) {
        const std::size_t groups = n / 4;
        if (groups > 0) {
            add_groups<<<blocks_for(groups, std::size_t{kThreadsPerBlock} * kGroupsPerThread), kThreadsPerBlock, 0,
                         stream>>>(reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b),
                                   reinterpret_cast<float4*>(c), groups);
            LABKIT_CHECK_LAUNCH();
        }
        scalar_begin = groups * 4;
    }
    if (scalar_begin < n) {
        add_scalars<<<blocks_for(n - scalar_begin, kThreadsPerBlock), kThreadsPerBlock, 0, stream>>>(a, b, c,
                                                                                                       scalar_begin, n);
        LABKIT_CHECK_LAUNCH();
    }
}

struct HiddenStream {
    cudaStream_t stream = nullptr;  // non-blocking: the legacy stream never waits for it
    cudaEvent_t first_pass_done = nullptr;
    float* sums = nullptr;          // where the hidden passes write their sums
    std::size_t capacity = 0;
};

HiddenStream& hidden() {
    static HiddenStream h = [] {
        HiddenStream made;
        LABKIT_CHECK(cudaStreamCreateWithFlags(&made.stream, cudaStreamNonBlocking));
        LABKIT_CHECK(cudaEventCreateWithFlags(&made.first_pass_done, cudaEventDisableTiming));
        return made;
    }();
    return h;
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    HiddenStream& h = hidden();
    if (h.capacity < n) {
        // Only when n grows (a new case): the hidden passes of the last call are done first.
        LABKIT_CHECK(cudaStreamSynchronize(h.stream));
        if (h.sums != nullptr) LABKIT_CHECK(cudaFree(h.sums));
        LABKIT_CHECK(cudaMalloc(&h.sums, n * sizeof(float)));
        h.capacity = n;
    }
    add_once(a, b, c, n, cudaStreamLegacy);
    LABKIT_CHECK(cudaEventRecord(h.first_pass_done, cudaStreamLegacy));
    LABKIT_CHECK(cudaStreamWaitEvent(h.stream, h.first_pass_done, 0));
    for (int pass = 1; pass < kPasses; ++pass) add_once(a, b, h.sums, n, h.stream);
}
