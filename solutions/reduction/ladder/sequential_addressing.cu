// reduction ladder, rung 2: lecture 3's alternative strategy (sequential addressing).
// The tree runs the other way round: in each round the first `stride` threads add the
// element `stride` places to their right, and stride halves from 128 down to 1. The
// working threads are contiguous from thread 0, so whole warps are either all busy or
// all idle and no warp diverges until fewer than 32 threads are left. The addresses a
// warp touches are consecutive as well, so shared memory serves them without bank
// conflicts (rung 1's t, t + 2, t + 4, ... collide in the same banks).
//
// Same multi-pass structure as rung 1 (multipass.cuh): one partial sum per block, then
// passes over the partial sums in the workspace until one block writes *out.
#include "multipass.cuh"

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

}  // namespace

// The multi-pass reduction of multipass.cuh around this rung's block reduce.
MULTIPASS_DEFINE_API(multipass::KernelBlockReduce<kElementsPerBlock, kThreadsPerBlock, reduce_blocks>);
