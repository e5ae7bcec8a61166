// Lab reduction: *out = in[0] + in[1] + ... + in[n-1], for floats.
//
// What you practise here (lecture 3, and lecture 9 on floating point): a parallel
// reduction as a tree of additions, first in shared memory and then inside a warp;
// combining the partial sums of many blocks; and then making a memory-bound kernel read
// the input as fast as the GPU allows. The answer is checked against the exact sum with
// a tolerance that allows for rounding in any tree of additions, but not for an
// element left out or added twice. The handout explains the tolerance and its one rule:
// a thread may chain at most 64 additions into one accumulator; everything else is
// combined as a tree.
//
// So do not atomicAdd every block's sum into *out. Float addition is not associative:
// each order rounds differently. A chain of atomicAdds is as long as the grid, its order
// changes from run to run as blocks finish, and so does the answer: far more rounding
// than a tree, and a result that can pass on one run and fail on the next (the checker
// runs every case twice and grades the worse run). Combine the block sums as a tree: a
// second kernel over them, or the last block to finish adds them up.
//
// Build and run:   cudalab run reduction .          (checks every test case)
//                  cudalab run reduction . --bench  (times it against the copy roof)
#include <cstdint>

#include "labkit/check.hpp"
#include "reduction.hpp"

// Threads per block: a multiple of the warp size (32), so no warp is left half empty.
constexpr int kThreadsPerBlock = 256;

// TODO 1: write a kernel that adds up the elements of one block, as in lecture 3:
//   * Load: thread t copies one element into partial_sum[t]; past the end of the
//     array it stores 0.0f instead (adding 0 changes nothing).
//   * Reduce: the tree with sequential addressing ("alternative strategy"): for stride
//     = kThreadsPerBlock / 2, then half of that, down to 1: __syncthreads(), then
//     every thread t < stride adds partial_sum[t + stride] into partial_sum[t].
//     (Check the loop condition: the last round has stride 1.)
//   * Store: thread 0 writes partial_sum[0] to block_sums[blockIdx.x].
__global__ void reduce_block_kernel(const float* in, float* block_sums, std::size_t n) {
    // your code here, starting with the block's shared array:
    //     __shared__ float partial_sum[kThreadsPerBlock];
}

// TODO 2: one launch leaves one partial sum per block. Return the bytes needed to
// keep them: the block sums of the first pass, plus those of every later pass
// (see TODO 3). The harness allocates this much before timing starts.
std::size_t reduce_sum_workspace_bytes(std::size_t n) {
    (void)n;
    return 0;
}

void reduce_sum(const float* in, float* out, std::size_t n, void* workspace) {
    // TODO 3: add up all n elements, several passes of reduce_block_kernel:
    //   blocks = ceil(count / kThreadsPerBlock); launch
    //   reduce_block_kernel<<<blocks, kThreadsPerBlock>>>(in, block_sums, count) and
    //   check it with LABKIT_CHECK_LAUNCH(). The block sums go to the workspace; the
    //   next pass adds them up (count = blocks), into the next part of the workspace.
    //   When only one block is left, let it write straight to out: that is the answer.
    //   Do not synchronise with the host or allocate memory here.
    // Once it passes every case, make it faster, one step at a time: add two elements
    // per thread while loading; finish the last 32 partial sums with __shfl_down_sync;
    // let each thread loop over many float4 groups (at most 64 additions into one
    // accumulator); and finish in one launch, in the last block to arrive.
    (void)in; (void)out; (void)n; (void)workspace; (void)kThreadsPerBlock;
}
