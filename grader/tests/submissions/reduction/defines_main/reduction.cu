// Attack: bring its own main(). The reduction is correct (the same as ../correct), but
// the file also defines main(), which prints "all passed" and exits 0 without running a
// single case. The harness's main lives in a static library, which a linker searches only
// for symbols still undefined, so this main could silently replace it.
//
// What the grader must do: refuse any submission that defines main() (or any other
// harness symbol) before it links, and say so. The grade is compile_error, with a
// message naming main().
#include <cstdio>

#include "labkit/check.hpp"
#include "reduction.hpp"

namespace {

constexpr unsigned kThreadsPerBlock = 256;
constexpr std::size_t kMaxChain = 64;  // the handout's limit on additions into one accumulator
constexpr std::size_t kElementsPerFirstBlock = kThreadsPerBlock * kMaxChain;
constexpr std::size_t kSumsPerLaterBlock = 2 * kThreadsPerBlock;

std::size_t blocks_for(std::size_t items, std::size_t per_block) { return (items + per_block - 1) / per_block; }

// The sum of x over the block, in thread 0: sequential addressing, halving every round.
__device__ float block_sum(float x) {
    __shared__ float partial[kThreadsPerBlock];
    partial[threadIdx.x] = x;
    for (unsigned stride = kThreadsPerBlock / 2; stride > 0; stride /= 2) {
        __syncthreads();
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    }
    return partial[0];
}

__global__ void sum_elements(const float* __restrict__ in, std::size_t n, float* __restrict__ sums) {
    const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    float chain = 0.0f;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += threads)
        chain += in[i];
    const float sum = block_sum(chain);
    if (threadIdx.x == 0) sums[blockIdx.x] = sum;
}

__global__ void sum_partial_sums(const float* __restrict__ in, std::size_t count, float* __restrict__ sums) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kSumsPerLaterBlock + threadIdx.x;
    const float first = i < count ? in[i] : 0.0f;
    const float second = i + kThreadsPerBlock < count ? in[i + kThreadsPerBlock] : 0.0f;
    const float sum = block_sum(first + second);
    if (threadIdx.x == 0) sums[blockIdx.x] = sum;
}

}  // namespace

// Two areas of partial sums, used in turn: the first pass's, and the next pass's.
std::size_t reduce_sum_workspace_bytes(std::size_t n) {
    const std::size_t first = blocks_for(n, kElementsPerFirstBlock);
    return (first + blocks_for(first, kSumsPerLaterBlock)) * sizeof(float);
}

void reduce_sum(const float* in, float* out, std::size_t n, void* workspace) {
    const std::size_t first = blocks_for(n, kElementsPerFirstBlock);
    float* const areas[2] = {static_cast<float*>(workspace), static_cast<float*>(workspace) + first};

    sum_elements<<<static_cast<unsigned>(first), kThreadsPerBlock>>>(in, n, first == 1 ? out : areas[0]);
    LABKIT_CHECK_LAUNCH();
    std::size_t count = first;
    int from = 0;
    while (count > 1) {
        const std::size_t blocks = blocks_for(count, kSumsPerLaterBlock);
        sum_partial_sums<<<static_cast<unsigned>(blocks), kThreadsPerBlock>>>(areas[from], count,
                                                                              blocks == 1 ? out : areas[1 - from]);
        LABKIT_CHECK_LAUNCH();
        count = blocks;
        from = 1 - from;
    }
}

int main() {
    std::puts("all passed");
    return 0;
}
