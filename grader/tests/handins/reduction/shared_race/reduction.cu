#include "reduction.hpp"

constexpr int kThreads = 256;

std::size_t reduce_sum_workspace_bytes(std::size_t n) {
    return ((n + kThreads - 1) / kThreads) * sizeof(float);
}

// A block tree in shared memory with the barrier between steps left out: a step reads
// sums that the step before may not have written yet.
__global__ void block_sums(const float* in, float* partial, std::size_t n) {
    __shared__ float sums[kThreads];
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kThreads + threadIdx.x;
    sums[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

__global__ void finish(const float* partial, float* out, std::size_t blocks) {
    float total = 0.0f;
    for (std::size_t b = 0; b < blocks; ++b) total += partial[b];
    *out = total;
}

void reduce_sum(const float* in, float* out, std::size_t n, void* workspace) {
    const std::size_t blocks = (n + kThreads - 1) / kThreads;
    float* partial = static_cast<float*>(workspace);
    block_sums<<<static_cast<unsigned>(blocks), kThreads>>>(in, partial, n);
    finish<<<1, 1>>>(partial, out, blocks);
}
