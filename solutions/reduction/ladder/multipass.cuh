// The multi-pass reduction the reduction-ladder rungs share. One launch of a rung's
// block-reduce kernel leaves one partial sum per block, so reduce_sum launches it again
// on those partial sums until a single block is left, and that block writes the answer
// to *out: 2^28 elements at 256 per block take four passes (2^20, 2^12, 16, 1 partial
// sums). Every pass but the last writes its partial sums to the workspace, each pass
// after the previous one, so that no pass overwrites what it is still reading.
//
// The rungs differ only in their block reduce, so this host-side driver lives here once,
// and each rung file keeps just its teaching kernel. The driver is a template over a
// small policy type, BlockReduce:
//   BlockReduce::kElementsPerBlock, BlockReduce::kThreadsPerBlock
//   BlockReduce::launch(blocks, in, block_sums, n)   launch the block reduce (block b
//                                                    writes block_sums[b]), no error check.
// KernelBlockReduce below makes one from a rung's kernel(in, block_sums, n), and
// MULTIPASS_DEFINE_API(BlockReduce) defines the two functions of reduction.hpp from it:
//   MULTIPASS_DEFINE_API(multipass::KernelBlockReduce<kElements, kThreads, my_kernel>);
//
// The student-facing solutions/reduction/reduction.cu and starter/ stay single files on
// purpose.
#pragma once

#include <cstddef>

#include "labkit/check.hpp"
#include "reduction.hpp"

namespace multipass {

// The policy for a rung whose block-reduce kernel is kernel(in, block_sums, n).
template <unsigned kElements, unsigned kThreads, void (*kKernel)(const float*, float*, std::size_t)>
struct KernelBlockReduce {
    static constexpr unsigned kElementsPerBlock = kElements;
    static constexpr unsigned kThreadsPerBlock = kThreads;
    static void launch(unsigned blocks, const float* in, float* block_sums, std::size_t n) {
        kKernel<<<blocks, kThreadsPerBlock>>>(in, block_sums, n);
    }
};

template <class BlockReduce>
std::size_t blocks_for(std::size_t count) {
    return (count + BlockReduce::kElementsPerBlock - 1) / BlockReduce::kElementsPerBlock;
}

template <class BlockReduce>
std::size_t workspace_bytes(std::size_t n) {
    std::size_t floats = 0;
    for (std::size_t count = blocks_for<BlockReduce>(n); count > 1; count = blocks_for<BlockReduce>(count))
        floats += count;
    return floats * sizeof(float);
}

template <class BlockReduce>
void reduce(const float* in, float* out, std::size_t n, void* workspace) {
    float* next_sums = static_cast<float*>(workspace);
    for (std::size_t count = n;;) {
        const std::size_t blocks = blocks_for<BlockReduce>(count);
        float* block_sums = blocks == 1 ? out : next_sums;
        BlockReduce::launch(static_cast<unsigned>(blocks), in, block_sums, count);
        LABKIT_CHECK_LAUNCH();
        if (blocks == 1) return;
        in = block_sums;  // the next pass adds up this pass's partial sums
        next_sums += blocks;
        count = blocks;
    }
}

}  // namespace multipass

// Defines the two functions of reduction.hpp (external linkage) on top of the policy
// given as the argument (commas allowed). Use it exactly once per rung, at global scope.
#define MULTIPASS_DEFINE_API(...)                                                                                 \
    std::size_t reduce_sum_workspace_bytes(std::size_t n) { return ::multipass::workspace_bytes<__VA_ARGS__>(n); } \
    void reduce_sum(const float* in, float* out, std::size_t n, void* workspace) {                                \
        ::multipass::reduce<__VA_ARGS__>(in, out, n, workspace);                                                  \
    }                                                                                                             \
    static_assert(true, "require a semicolon after the macro")
