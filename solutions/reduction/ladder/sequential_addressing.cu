// reduction ladder, rung 2: lecture 3's alternative strategy (sequential addressing).
// The tree runs the other way round: in each round the first `stride` threads add the
// element `stride` places to their right, and stride halves from 128 down to 1. The
// working threads are contiguous from thread 0, so whole warps are either all busy or
// all idle and no warp diverges until fewer than 32 threads are left. The addresses a
// warp touches are consecutive as well, so shared memory serves them without bank
// conflicts (rung 1's t, t + 2, t + 4, ... collide in the same banks).
//
// Same multi-pass structure as rung 1: one partial sum per block, then passes over the
// partial sums in the workspace until one block writes *out.
#include "labkit/check.hpp"
#include "reduction.hpp"

namespace {

constexpr unsigned kThreadsPerBlock = 256;
constexpr unsigned kElementsPerBlock = kThreadsPerBlock;  // one element per thread

__global__ void reduce_blocks(const float* in, float* block_sums, std::size_t n) {
    __shared__ float partial_sum[kThreadsPerBlock];
    const unsigned t = threadIdx.x;
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kElementsPerBlock + t;
    partial_sum[t] = i < n ? in[i] : 0.0f;  // 0 past the end: adding it changes nothing
    // The slide's loop stops at `stride > 1`, one round early: partial_sum[1] would
    // never be added to partial_sum[0]. The last round is stride == 1.
    for (unsigned stride = kThreadsPerBlock / 2; stride > 0; stride /= 2) {
        __syncthreads();  // every thread has finished the previous round
        if (t < stride) partial_sum[t] += partial_sum[t + stride];
    }
    // Thread 0 made the last addition itself, so it may read the result without a barrier.
    if (t == 0) block_sums[blockIdx.x] = partial_sum[0];
}

std::size_t blocks_for(std::size_t count) { return (count + kElementsPerBlock - 1) / kElementsPerBlock; }

}  // namespace

// Every pass but the last writes its partial sums to the workspace, each pass after
// the previous one, so that no pass overwrites what it is still reading.
std::size_t reduce_sum_workspace_bytes(std::size_t n) {
    std::size_t floats = 0;
    for (std::size_t count = blocks_for(n); count > 1; count = blocks_for(count)) floats += count;
    return floats * sizeof(float);
}

void reduce_sum(const float* in, float* out, std::size_t n, void* workspace) {
    float* next_sums = static_cast<float*>(workspace);
    for (std::size_t count = n;;) {
        const std::size_t blocks = blocks_for(count);
        float* block_sums = blocks == 1 ? out : next_sums;
        reduce_blocks<<<static_cast<unsigned>(blocks), kThreadsPerBlock>>>(in, block_sums, count);
        LABKIT_CHECK_LAUNCH();
        if (blocks == 1) return;
        in = block_sums;  // the next pass adds up this pass's partial sums
        next_sums += blocks;
        count = blocks;
    }
}
