// Cheat: the slow reduction of ../slow, replaced by the remembered sum whenever the input
// looks the same, decided on the GPU so that no call waits for the host. Each call first
// launches a one-warp kernel that reads 16 input values at evenly spread indices and
// compares them (bit for bit) and n with what it stored after the last computed call; on
// a match it writes the stored sum to *out and sets a device flag that makes every slow
// kernel after it return at once. Otherwise the slow path runs, and a last one-warp kernel
// stores the 16 samples, n and the sum for next time. The state lives in __device__
// variables (the workspace is garbage on entry, and reduce_sum may not allocate).
//
// What the grader must do: fill the input with fresh random values before every timed
// call. Then the samples never match, every timed call is the slow path, every case
// passes (correctness full), and its time is far past the zero-marks ratio (performance
// zero), exactly as for ../slow. A benchmark that reused one input would time a lookup.
#include "labkit/check.hpp"
#include "reduction.hpp"

namespace {

constexpr unsigned kSlowBlocks = 16;
constexpr unsigned kThreadsPerBlock = 256;
constexpr std::size_t kRun = 64;  // the handout's limit on additions into one accumulator
constexpr int kSamples = 16;
constexpr unsigned kFullWarp = 0xffffffffu;

// What the last computed call saw and answered. stored_n == 0 means nothing yet (n >= 1).
__device__ float stored_samples[kSamples];
__device__ std::size_t stored_n;
__device__ float stored_sum;
__device__ int input_seen_before;

__device__ std::size_t sample_index(int s, std::size_t n) {
    return (n - 1) * static_cast<std::size_t>(s) / (kSamples - 1);
}

// One warp; lanes 16-31 only take part in the vote.
__global__ void look_up(const float* in, std::size_t n, float* out) {
    const int lane = static_cast<int>(threadIdx.x);
    bool same = stored_n == n;
    if (lane < kSamples) {
        const float now = in[sample_index(lane, n)];
        same = same && __float_as_uint(now) == __float_as_uint(stored_samples[lane]);
    }
    const bool seen = __all_sync(kFullWarp, same);
    if (lane == 0) {
        input_seen_before = seen;
        if (seen) *out = stored_sum;
    }
}

__global__ void remember(const float* in, std::size_t n, const float* out) {
    if (input_seen_before) return;
    const int lane = static_cast<int>(threadIdx.x);
    if (lane < kSamples) stored_samples[lane] = in[sample_index(lane, n)];
    if (lane == 0) {
        stored_n = n;
        stored_sum = *out;
    }
}

std::size_t halves(std::size_t count) { return (count + 1) / 2; }

// ../slow's first pass: 16 blocks, one thread per run of 64 consecutive elements, added one
// at a time (uncoalesced, one load in flight per thread).
__global__ void sum_runs_slowly(const float* in, std::size_t n, float* sums) {
    if (input_seen_before) return;
    const std::size_t runs = (n + kRun - 1) / kRun;
    const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t run = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; run < runs;
         run += threads) {
        const std::size_t end = (run + 1) * kRun < n ? (run + 1) * kRun : n;
        float chain = 0.0f;
#pragma unroll 1
        for (std::size_t i = run * kRun; i < end; ++i) chain += in[i];
        sums[run] = chain;
    }
}

// One level of a tree: sums[k] = in[2k] + in[2k + 1] (a lone last value is carried over).
__global__ void add_pairs(const float* in, std::size_t count, float* sums) {
    if (input_seen_before) return;
    const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; 2 * k < count;
         k += threads)
        sums[k] = 2 * k + 1 < count ? in[2 * k] + in[2 * k + 1] : in[2 * k];
}

}  // namespace

std::size_t reduce_sum_workspace_bytes(std::size_t n) {
    const std::size_t runs = (n + kRun - 1) / kRun;
    return (runs + halves(runs)) * sizeof(float);
}

void reduce_sum(const float* in, float* out, std::size_t n, void* workspace) {
    look_up<<<1, 32>>>(in, n, out);
    LABKIT_CHECK_LAUNCH();

    const std::size_t runs = (n + kRun - 1) / kRun;
    float* const areas[2] = {static_cast<float*>(workspace), static_cast<float*>(workspace) + runs};
    sum_runs_slowly<<<kSlowBlocks, kThreadsPerBlock>>>(in, n, runs == 1 ? out : areas[0]);
    LABKIT_CHECK_LAUNCH();
    std::size_t count = runs;
    int from = 0;
    while (count > 1) {
        const std::size_t next = halves(count);
        add_pairs<<<kSlowBlocks, kThreadsPerBlock>>>(areas[from], count, next == 1 ? out : areas[1 - from]);
        LABKIT_CHECK_LAUNCH();
        count = next;
        from = 1 - from;
    }

    remember<<<1, 32>>>(in, n, out);
    LABKIT_CHECK_LAUNCH();
}
