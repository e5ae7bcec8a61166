// reduction ladder, rung 4: the last five rounds in registers. Once the tree of rung 3
// is down to 32 partial sums, they all live in warp 0, whose 32 threads execute in
// lockstep: __shfl_down_sync(mask, x, offset) hands each lane the x of the lane
// `offset` places higher, straight from register to register. The rounds with strides
// 16, 8, 4, 2, 1 then need neither shared memory nor __syncthreads().
//
// The additions are the same as rung 3's, in the same order (lane t adds lane t +
// offset, exactly as thread t added partial_sum[t + stride]), so the result is the
// same float, bit for bit; only the time differs. The best rung (reduction.cu) goes
// one step further and starts with shuffles in every warp. The multi-pass driver around
// the kernel is shared by all the rungs: see multipass.cuh.
#include "multipass.cuh"

namespace {

constexpr unsigned kThreadsPerBlock = 256;
constexpr unsigned kElementsPerBlock = 2 * kThreadsPerBlock;  // two elements per thread
constexpr unsigned kWarpSize = 32;
constexpr unsigned kFullWarp = 0xffffffffu;  // every lane of the warp takes part in the shuffle

__global__ void reduce_blocks(const float* in, float* block_sums, std::size_t n) {
    __shared__ float partial_sum[kThreadsPerBlock];
    const unsigned t = threadIdx.x;
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kElementsPerBlock + t;
    const float first = i < n ? in[i] : 0.0f;
    const float second = i + kThreadsPerBlock < n ? in[i + kThreadsPerBlock] : 0.0f;
    // Each thread keeps its running value in a register as well, so warp 0 can carry on
    // from it after the shared-memory rounds without reading shared memory again.
    float sum = first + second;
    partial_sum[t] = sum;
    for (unsigned stride = kThreadsPerBlock / 2; stride >= kWarpSize; stride /= 2) {
        __syncthreads();
        if (t < stride) partial_sum[t] = sum = sum + partial_sum[t + stride];
    }
    if (t < kWarpSize) {
        for (unsigned offset = kWarpSize / 2; offset > 0; offset /= 2) sum += __shfl_down_sync(kFullWarp, sum, offset);
        if (t == 0) block_sums[blockIdx.x] = sum;
    }
}

}  // namespace

// The multi-pass reduction of multipass.cuh around this rung's block reduce.
MULTIPASS_DEFINE_API(multipass::KernelBlockReduce<kElementsPerBlock, kThreadsPerBlock, reduce_blocks>);
