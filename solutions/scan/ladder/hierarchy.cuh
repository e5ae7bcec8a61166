// The multi-level scan the scan-ladder rungs share: lecture 4's large-vector scheme,
// applied recursively. One level of it
//   1. runs the rung's block scan: every block scans its own segment of kItems elements
//      and writes the segment total to the workspace (the block sums);
//   2. scans the block sums, inclusively and in place, with the same code on a vector
//      kItems times shorter (itself split into blocks when it is longer than one block);
//   3. adds back: every element of block b + 1 gets the scanned sum of blocks 0..b.
// Each level's block sums start on a 256-byte boundary of the workspace, one level after
// the other, so the workspace holds sum over the levels of padded(blocks) 4-byte words.
//
// The rungs differ only in their block scan, so this host-side driver lives here once,
// and each rung file keeps just its teaching kernel. The driver is a template over a
// small policy type, BlockScan:
//   BlockScan::kItems, BlockScan::kThreads   elements one block scans, threads per block;
//   BlockScan::launch<T>(blocks, in, out, n, exclusive, block_sums)
//                                            launch the block scan (block_sums: nullptr
//                                            when there is one block), no error check.
// KernelBlockScan below makes one from a rung's kernel template, and
// SCAN_HIERARCHY_DEFINE_API(BlockScan) defines the five functions of scan.hpp from it:
//   SCAN_HIERARCHY_DEFINE_API(scan_hierarchy::KernelBlockScan<kItems, kThreads,
//                                                             my_scan<float>, my_scan<int>>);
//
// The block scan must allow in == out (the block sums are scanned in place): every block
// reads its whole segment before it writes any of it, and blocks touch disjoint segments.
// The student-facing solutions/scan/scan.cu and starter/ stay single files on purpose.
#pragma once

#include <cstddef>
#include <type_traits>

#include "labkit/check.hpp"
#include "scan.hpp"

namespace scan_hierarchy {

// The workspace holds block sums as 4-byte elements, whichever scan is asked for.
static_assert(sizeof(float) == sizeof(int), "one workspace layout serves both element types");

// Block b + 1 adds the sum of blocks 0..b (block 0 needs nothing, so it gets no block).
// Thread t handles elements t, t + kThreads, ... of the segment: coalesced.
template <int kItems, int kThreads, typename T>
__global__ __launch_bounds__(kThreads) void add_block_prefixes(T* out, std::size_t n, const T* scanned_block_sums) {
    static_assert(kItems % kThreads == 0, "a block adds back a whole number of elements per thread");
    const std::size_t block = static_cast<std::size_t>(blockIdx.x) + 1;
    const T prefix = scanned_block_sums[block - 1];
#pragma unroll
    for (int k = 0; k < kItems / kThreads; ++k) {
        const std::size_t i = block * kItems + static_cast<std::size_t>(k) * kThreads + threadIdx.x;
        if (i < n) out[i] += prefix;
    }
}

// The policy for a rung whose block-scan kernel is a template over the element type,
// kernel<T>(in, out, n, exclusive, block_sums): give it the float and int instances.
template <int kItemsPerBlock, int kThreadsPerBlock, auto kFloatKernel, auto kIntKernel>
struct KernelBlockScan {
    static constexpr int kItems = kItemsPerBlock;
    static constexpr int kThreads = kThreadsPerBlock;
    template <typename T>
    static void launch(unsigned blocks, const T* in, T* out, std::size_t n, bool exclusive, T* block_sums) {
        if constexpr (std::is_same_v<T, float>)
            kFloatKernel<<<blocks, kThreads>>>(in, out, n, exclusive, block_sums);
        else
            kIntKernel<<<blocks, kThreads>>>(in, out, n, exclusive, block_sums);
    }
};

template <class BlockScan>
std::size_t blocks_for(std::size_t n) {
    return (n + BlockScan::kItems - 1) / BlockScan::kItems;
}

// Each level's block sums start on a 256-byte boundary.
inline std::size_t padded(std::size_t count) { return (count + 63) / 64 * 64; }

// One level of the hierarchy. in may equal out (see the top of this file).
template <class BlockScan, typename T>
void scan_level(const T* in, T* out, std::size_t n, bool exclusive, T* workspace) {
    const std::size_t blocks = blocks_for<BlockScan>(n);
    T* block_sums = blocks > 1 ? workspace : nullptr;
    BlockScan::launch(static_cast<unsigned>(blocks), in, out, n, exclusive, block_sums);
    LABKIT_CHECK_LAUNCH();
    if (blocks == 1) return;
    // The levels above are inclusive: block b needs the sum of blocks 0..b-1, which is
    // the inclusive scan of the block sums at b-1.
    scan_level<BlockScan, T>(block_sums, block_sums, blocks, false, workspace + padded(blocks));
    constexpr int kItems = BlockScan::kItems;
    constexpr int kThreads = BlockScan::kThreads;
    add_block_prefixes<kItems, kThreads, T><<<static_cast<unsigned>(blocks - 1), kThreads>>>(out, n, block_sums);
    LABKIT_CHECK_LAUNCH();
}

template <class BlockScan, typename T>
void scan(const T* in, T* out, std::size_t n, bool exclusive, void* workspace) {
    if (n == 0) return;
    scan_level<BlockScan, T>(in, out, n, exclusive, static_cast<T*>(workspace));
}

template <class BlockScan>
std::size_t workspace_bytes(std::size_t n) {
    std::size_t elements = 0;
    for (std::size_t count = blocks_for<BlockScan>(n); count > 1; count = blocks_for<BlockScan>(count))
        elements += padded(count);
    return elements * sizeof(float);
}

}  // namespace scan_hierarchy

// Defines the five functions of scan.hpp (external linkage) on top of the policy given
// as the argument (commas allowed). Use it exactly once per rung, at global scope.
#define SCAN_HIERARCHY_DEFINE_API(...)                                                      \
    std::size_t scan_workspace_bytes(std::size_t n) {                                       \
        return ::scan_hierarchy::workspace_bytes<__VA_ARGS__>(n);                           \
    }                                                                                       \
    SCAN_HIERARCHY_DEFINE_SCAN_(scan_inclusive, float, false, __VA_ARGS__)                  \
    SCAN_HIERARCHY_DEFINE_SCAN_(scan_exclusive, float, true, __VA_ARGS__)                   \
    SCAN_HIERARCHY_DEFINE_SCAN_(scan_inclusive_int, int, false, __VA_ARGS__)                \
    SCAN_HIERARCHY_DEFINE_SCAN_(scan_exclusive_int, int, true, __VA_ARGS__)                 \
    static_assert(true, "require a semicolon after the macro")

// One of the four scans of scan.hpp; a helper of SCAN_HIERARCHY_DEFINE_API.
#define SCAN_HIERARCHY_DEFINE_SCAN_(name, T, exclusive, ...)                               \
    void name(const T* in, T* out, std::size_t n, void* workspace) {                       \
        ::scan_hierarchy::scan<__VA_ARGS__>(in, out, n, exclusive, workspace);              \
    }
