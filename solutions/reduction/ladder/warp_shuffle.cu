// reduction ladder, rung 4: the last five rounds in registers. Once the tree of rung 3
// is down to 32 partial sums, they all live in warp 0, whose 32 threads execute in
// lockstep: __shfl_down_sync(mask, x, offset) hands each lane the x of the lane
// `offset` places higher, straight from register to register. The rounds with strides
// 16, 8, 4, 2, 1 then need neither shared memory nor __syncthreads().
//
// The additions are the same as rung 3's, in the same order (lane t adds lane t +
// offset, exactly as thread t added partial_sum[t + stride]), so the result is the
// same float, bit for bit; only the time differs. The best rung (reduction.cu) goes
// one step further and starts with shuffles in every warp.
#include "labkit/check.hpp"
#include "reduction.hpp"

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
