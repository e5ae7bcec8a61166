// Baseline: correct but deliberately slow. The honest version of the two caching cheats in
// this folder: its performance score is zero because it is slow, not because it lies.
//
// First pass: the input is cut into runs of 64 consecutive elements; a grid of only 16
// blocks takes them in turn, one thread per run, adding its 64 elements one at a time in a
// rolled loop (at every step a warp's 32 loads hit 32 different cache lines, and each
// thread waits for each load). Each run's sum goes to the workspace. Later passes add
// the sums in pairs, halving their number each pass, until one is left, in *out. Every
// element so goes through at most 64 chained additions and a tree after them, which is
// what labs/reduction/bound.hpp allows, so the answer is always within the tolerance.
// On an H100 at n = 2^26 it takes about 2.3 ms, 20 times the reference's 0.1 ms (the
// zero-marks ratio is 6).
#include "labkit/check.hpp"
#include "reduction.hpp"

namespace {

constexpr unsigned kSlowBlocks = 16;
constexpr unsigned kThreadsPerBlock = 256;
constexpr std::size_t kRun = 64;  // the handout's limit on additions into one accumulator

std::size_t halves(std::size_t count) { return (count + 1) / 2; }

__global__ void sum_runs_slowly(const float* in, std::size_t n, float* sums) {
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
    const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; 2 * k < count;
         k += threads)
        sums[k] = 2 * k + 1 < count ? in[2 * k] + in[2 * k + 1] : in[2 * k];
}

}  // namespace

// Two areas used in turn: the runs' sums, then half as many.
std::size_t reduce_sum_workspace_bytes(std::size_t n) {
    const std::size_t runs = (n + kRun - 1) / kRun;
    return (runs + halves(runs)) * sizeof(float);
}

void reduce_sum(const float* in, float* out, std::size_t n, void* workspace) {
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
}
