// Cheat: the slow reduction of ../slow, replaced by the remembered sum whenever the input
// looks the same, decided on the host. Each call gathers 16 input values at evenly spread
// indices into a __device__ array and copies them to the host (which also breaks the
// lab's rule against synchronising with the host); if they and n equal what the last
// computed call saw, it copies the stored sum into *out (device to device) and returns.
// Otherwise the slow path runs and the sum is copied into a __device__ variable for next
// time (the workspace is garbage on entry, and reduce_sum may not allocate).
//
// What the grader must do: fill the input with fresh random values before every timed
// call. Then the samples never match, every timed call is the slow path, every case
// passes (correctness full), and its time is far past the zero-marks ratio (performance
// zero), exactly as for ../slow. A benchmark that reused one input would time a lookup.
#include <array>
#include <cstring>

#include "labkit/check.hpp"
#include "reduction.hpp"

namespace {

constexpr unsigned kSlowBlocks = 16;
constexpr unsigned kThreadsPerBlock = 256;
constexpr std::size_t kRun = 64;  // the handout's limit on additions into one accumulator
constexpr int kSamples = 16;

__device__ float gathered_samples[kSamples];
__device__ float stored_sum;

__device__ std::size_t sample_index(int s, std::size_t n) {
    return (n - 1) * static_cast<std::size_t>(s) / (kSamples - 1);
}

__global__ void gather_samples(const float* in, std::size_t n) {
    const int lane = static_cast<int>(threadIdx.x);
    if (lane < kSamples) gathered_samples[lane] = in[sample_index(lane, n)];
}

std::size_t halves(std::size_t count) { return (count + 1) / 2; }

// ../slow's first pass: 16 blocks, one thread per run of 64 consecutive elements, added one
// at a time (uncoalesced, one load in flight per thread).
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

void sum_slowly(const float* in, float* out, std::size_t n, void* workspace) {
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

using Samples = std::array<float, kSamples>;

struct LastCall {
    bool valid = false;
    std::size_t n = 0;
    Samples samples{};
};

}  // namespace

std::size_t reduce_sum_workspace_bytes(std::size_t n) {
    const std::size_t runs = (n + kRun - 1) / kRun;
    return (runs + halves(runs)) * sizeof(float);
}

void reduce_sum(const float* in, float* out, std::size_t n, void* workspace) {
    static LastCall last;
    gather_samples<<<1, 32>>>(in, n);
    LABKIT_CHECK_LAUNCH();
    Samples now{};
    LABKIT_CHECK(cudaMemcpyFromSymbol(now.data(), gathered_samples, sizeof now));  // waits for the GPU
    if (last.valid && last.n == n && std::memcmp(last.samples.data(), now.data(), sizeof now) == 0) {
        LABKIT_CHECK(cudaMemcpyFromSymbolAsync(out, stored_sum, sizeof(float), 0, cudaMemcpyDeviceToDevice));
        return;
    }
    sum_slowly(in, out, n, workspace);
    LABKIT_CHECK(cudaMemcpyToSymbolAsync(stored_sum, out, sizeof(float), 0, cudaMemcpyDeviceToDevice));
    last = LastCall{true, n, now};
}
