// Lab sort: ascending sort of 32-bit unsigned keys, and a stable sort of key/value pairs.
//
// What you practise here (lecture 8): a least-significant-digit radix sort. Each pass sorts
// by one digit of the key, stably, so after the pass over the top digit the keys are in
// order. A pass has three steps, each a kernel: every block counts the digits of its tile
// (a block-local histogram); one exclusive scan over all the counts, digit by digit, gives
// every (digit, block) pair the place in the output where its keys start; and every block
// sorts its tile by the digit in shared memory with 1-bit stable splits (the lecture's
// split on a scan) and writes each key to its place. Stability is the whole point: a pass
// that changes the order of equal digits undoes the passes before it.
//
// Build and run:   cudalab run sort .          (checks every test case)
//                  cudalab run sort . --bench  (times it against CUB's radix sort)
#include <cstdint>

#include "labkit/check.hpp"
#include "sort.hpp"

// Threads per block of the tile kernels, and keys per thread: a tile of 4096 keys.
constexpr int kThreadsPerBlock = 256;
constexpr int kKeysPerThread = 16;
constexpr int kTile = kThreadsPerBlock * kKeysPerThread;


std::size_t sort_workspace_bytes(std::size_t n) {
    // TODO 1: return the bytes your sort needs besides its output: room to
    // ping-pong the keys (and values) between passes, the per-block digit counts,
    // and whatever the scan of those counts needs.
    (void)n;
    return 0;
}

void sort_keys(const std::uint32_t* keys_in, std::uint32_t* keys_out, std::size_t n, void* workspace) {
    // TODO 2: an LSD radix sort. For each digit, from the lowest: count each
    // block's digits (a histogram in shared memory), scan the counts of all
    // blocks digit by digit, and scatter each key to its place, keeping equal
    // digits in their order (a stable split on a scan, lecture 8).
    (void)keys_in; (void)keys_out; (void)n; (void)workspace; (void)kTile;
}

void sort_pairs(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                std::uint32_t* values_out, std::size_t n, void* workspace) {
    // TODO 3: the same sort, moving each value with its key. Radix sort is stable
    // when every pass is, so equal keys keep their input order.
    (void)keys_in; (void)values_in; (void)keys_out; (void)values_out; (void)n; (void)workspace;
}
