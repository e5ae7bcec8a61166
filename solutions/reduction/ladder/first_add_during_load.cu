// reduction ladder, rung 3: the first addition during the load. In rung 2 half the
// threads of a block go idle after the very first round of the tree. Here each thread
// instead reads two elements, one block-width apart, and adds them while loading, so a
// block of 256 threads covers 512 elements: half as many blocks (and partial sums) for
// the same work, every thread busy in the first addition, and two global loads per
// thread in flight at once instead of one.
//
// The tree and the multi-pass structure (multipass.cuh) are rung 2's. The order of the additions is
// still a binary tree: element i and element i + 256 meet first, exactly as if the
// tree had a round with stride 256.
#include "multipass.cuh"

namespace {

constexpr unsigned kThreadsPerBlock = 256;
constexpr unsigned kElementsPerBlock = 2 * kThreadsPerBlock;  // two elements per thread

__global__ void reduce_blocks(const float* in, float* block_sums, std::size_t n) {
    __shared__ float partial_sum[kThreadsPerBlock];
    const unsigned t = threadIdx.x;
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kElementsPerBlock + t;
    // Both loads are issued before the addition needs either; 0 stands in past the end.
    const float first = i < n ? in[i] : 0.0f;
    const float second = i + kThreadsPerBlock < n ? in[i + kThreadsPerBlock] : 0.0f;
    partial_sum[t] = first + second;
    for (unsigned stride = kThreadsPerBlock / 2; stride > 0; stride /= 2) {
        __syncthreads();
        if (t < stride) partial_sum[t] += partial_sum[t + stride];
    }
    if (t == 0) block_sums[blockIdx.x] = partial_sum[0];
}

}  // namespace

// The multi-pass reduction of multipass.cuh around this rung's block reduce.
MULTIPASS_DEFINE_API(multipass::KernelBlockReduce<kElementsPerBlock, kThreadsPerBlock, reduce_blocks>);
