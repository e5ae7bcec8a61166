// reduction ladder, rung 1: lecture 3's naive parallel reduction. Each block copies
// 256 elements into shared memory and adds them as a binary tournament: in round k,
// thread t with t % 2^k == 0 adds the element 2^(k-1) to its right. Threads that idle
// sit next to working ones in the same warp, so every round is a divergent branch
// (both sides executed by every warp) and fewer threads do real work each round.
//
// One launch leaves one partial sum per block, so reduce_sum launches again on those
// partial sums (kept in the workspace) until a single block is left, which writes the
// answer to *out: 2^28 elements take four passes (2^20, 2^12, 16, 1 partial sums). That
// multi-pass driver is shared by all the rungs: see multipass.cuh.
#include "multipass.cuh"

namespace {

constexpr unsigned kThreadsPerBlock = 256;
constexpr unsigned kElementsPerBlock = kThreadsPerBlock;  // one element per thread

__global__ void reduce_blocks(const float* in, float* block_sums, std::size_t n) {
    __shared__ float partial_sum[kThreadsPerBlock];
    const unsigned t = threadIdx.x;
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kElementsPerBlock + t;
    // Past the end, 0 stands in for the missing element: adding it changes nothing.
    partial_sum[t] = i < n ? in[i] : 0.0f;
    for (unsigned stride = 1; stride < kThreadsPerBlock; stride *= 2) {
        __syncthreads();  // every thread has finished the previous round
        if (t % (2 * stride) == 0) partial_sum[t] += partial_sum[t + stride];
    }
    // Thread 0 made the last addition itself, so it may read the result without a barrier.
    if (t == 0) block_sums[blockIdx.x] = partial_sum[0];
}

}  // namespace

// The multi-pass reduction of multipass.cuh around this rung's block reduce.
MULTIPASS_DEFINE_API(multipass::KernelBlockReduce<kElementsPerBlock, kThreadsPerBlock, reduce_blocks>);
