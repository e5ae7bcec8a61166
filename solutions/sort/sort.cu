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

// BEGIN SOLUTION
namespace {

// Bits of the key sorted per pass. The ladder's 1-bit rung (ladder/radix_split.cu) is this
// file with SORT_DIGIT_BITS 1: the lecture's stable splits, 32 passes instead of 8.
#ifndef SORT_DIGIT_BITS
#define SORT_DIGIT_BITS 4
#endif
constexpr int kDigitBits = SORT_DIGIT_BITS;
constexpr int kRadix = 1 << kDigitBits;
constexpr int kPasses = 32 / kDigitBits;
constexpr int kWarpSize = 32;
constexpr int kWarps = kThreadsPerBlock / kWarpSize;
constexpr unsigned kFullWarp = 0xffffffffu;
constexpr int kScanItems = 4;  // the counts' scan: 256 threads x 4 counts per block
constexpr int kScanTile = kThreadsPerBlock * kScanItems;

// Shared-memory index with one word of padding every 32, so that thread t reading its 16
// consecutive keys (t * 16 + j) meets no bank conflicts.
__device__ __forceinline__ int padded(int i) { return i + (i >> 5); }
constexpr int kPaddedTile = kTile + kTile / 32;

__device__ __forceinline__ unsigned digit_of(std::uint32_t key, int shift) { return (key >> shift) & (kRadix - 1); }

// Exclusive scan of one value per thread across the block; *total gets the block's sum.
__device__ unsigned block_exclusive_scan(unsigned value, unsigned* total) {
    __shared__ unsigned warp_sums[kWarps];
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    unsigned inclusive = value;
    for (int d = 1; d < kWarpSize; d *= 2) {
        const unsigned other = __shfl_up_sync(kFullWarp, inclusive, d);
        if (lane >= d) inclusive += other;
    }
    if (lane == kWarpSize - 1) warp_sums[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        unsigned w = lane < kWarps ? warp_sums[lane] : 0;
        for (int d = 1; d < kWarpSize; d *= 2) {
            const unsigned other = __shfl_up_sync(kFullWarp, w, d);
            if (lane >= d) w += other;
        }
        if (lane < kWarps) warp_sums[lane] = w;  // inclusive scan of the warp sums
    }
    __syncthreads();
    const unsigned before = (warp > 0 ? warp_sums[warp - 1] : 0) + inclusive - value;
    *total = warp_sums[kWarps - 1];
    __syncthreads();  // warp_sums is reused by the next call
    return before;
}

// Step 1: counts[d * blocks + b] = how many keys of tile b have digit d at `shift`.
__global__ void histogram_kernel(const std::uint32_t* keys, std::size_t n, int shift, unsigned* counts) {
    __shared__ unsigned hist[kRadix];
    if (threadIdx.x < kRadix) hist[threadIdx.x] = 0;
    __syncthreads();
    const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kTile;
    for (int j = 0; j < kKeysPerThread; ++j) {
        const std::size_t g = base + static_cast<std::size_t>(j) * kThreadsPerBlock + threadIdx.x;
        if (g < n) atomicAdd(&hist[digit_of(keys[g], shift)], 1u);
    }
    __syncthreads();
    if (threadIdx.x < kRadix) counts[static_cast<std::size_t>(threadIdx.x) * gridDim.x + blockIdx.x] = hist[threadIdx.x];
}

// Step 2: an exclusive scan of the counts, as in the scan lab: each block scans 1024 of
// them and leaves its total in block_sums; the totals are scanned the same way (one level
// more), then added back.
__global__ void scan_tile_kernel(unsigned* data, std::size_t m, unsigned* block_sums) {
    const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kScanTile + threadIdx.x * kScanItems;
    unsigned v[kScanItems];
    unsigned mine = 0;
    for (int j = 0; j < kScanItems; ++j) {
        v[j] = base + j < m ? data[base + j] : 0;
        mine += v[j];
    }
    unsigned total = 0;
    unsigned running = block_exclusive_scan(mine, &total);
    for (int j = 0; j < kScanItems; ++j) {
        if (base + j < m) data[base + j] = running;
        running += v[j];
    }
    if (threadIdx.x == 0 && block_sums) block_sums[blockIdx.x] = total;
}

__global__ void add_block_offsets_kernel(unsigned* data, std::size_t m, const unsigned* block_offsets) {
    const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kScanTile;
    for (int j = 0; j < kScanItems; ++j) {
        const std::size_t i = base + static_cast<std::size_t>(j) * kThreadsPerBlock + threadIdx.x;
        if (i < m) data[i] += block_offsets[blockIdx.x];
    }
}

std::size_t blocks_for(std::size_t m, std::size_t per_block) { return (m + per_block - 1) / per_block; }

// Exclusive scan of data[0..m) in place; `scratch` holds the levels of block totals.
void exclusive_scan(unsigned* data, std::size_t m, unsigned* scratch) {
    const std::size_t blocks = blocks_for(m, kScanTile);
    if (blocks == 1) {
        scan_tile_kernel<<<1, kThreadsPerBlock>>>(data, m, nullptr);
        LABKIT_CHECK_LAUNCH();
        return;
    }
    scan_tile_kernel<<<static_cast<unsigned>(blocks), kThreadsPerBlock>>>(data, m, scratch);
    LABKIT_CHECK_LAUNCH();
    exclusive_scan(scratch, blocks, scratch + blocks);
    add_block_offsets_kernel<<<static_cast<unsigned>(blocks), kThreadsPerBlock>>>(data, m, scratch);
    LABKIT_CHECK_LAUNCH();
}

// Room for every level of exclusive_scan's block totals over m counts.
std::size_t scan_scratch_count(std::size_t m) {
    std::size_t total = 0;
    for (std::size_t blocks = blocks_for(m, kScanTile); blocks > 1; blocks = blocks_for(blocks, kScanTile))
        total += blocks;
    return total;
}

// Step 3: sort the tile by the digit in shared memory (kDigitBits 1-bit stable splits),
// then write each key to offsets[d * blocks + b] + its rank among the tile's keys of digit d.
template <bool kWithValues>
__global__ void scatter_kernel(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                               std::uint32_t* values_out, std::size_t n, int shift, const unsigned* offsets) {
    __shared__ std::uint32_t tile_keys[kPaddedTile];
    __shared__ std::uint32_t tile_values[kWithValues ? kPaddedTile : 1];
    __shared__ unsigned digit_start[kRadix];
    const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kTile;
    const int valid = static_cast<int>(n - base < static_cast<std::size_t>(kTile) ? n - base : kTile);

    // Coalesced loads. Past the end: the largest key, which sorts after every real key of
    // its digit (the splits are stable and padding comes last), and is never written.
    for (int j = 0; j < kKeysPerThread; ++j) {
        const int i = j * kThreadsPerBlock + static_cast<int>(threadIdx.x);
        tile_keys[padded(i)] = i < valid ? keys_in[base + i] : 0xffffffffu;
        if constexpr (kWithValues) tile_values[padded(i)] = i < valid ? values_in[base + i] : 0u;
    }
    __syncthreads();

    std::uint32_t k[kKeysPerThread];
    std::uint32_t v[kKeysPerThread];
    const int first = static_cast<int>(threadIdx.x) * kKeysPerThread;
    for (int j = 0; j < kKeysPerThread; ++j) {
        k[j] = tile_keys[padded(first + j)];
        if constexpr (kWithValues) v[j] = tile_values[padded(first + j)];
    }
    for (int bit = shift; bit < shift + kDigitBits; ++bit) {
        unsigned ones = 0;
        for (int j = 0; j < kKeysPerThread; ++j) ones += (k[j] >> bit) & 1u;
        unsigned total_ones = 0;
        unsigned ones_before = block_exclusive_scan(ones, &total_ones);
        const unsigned total_zeros = kTile - total_ones;
        // Every thread has its keys in registers; now the tile can be overwritten.
        for (int j = 0; j < kKeysPerThread; ++j) {
            const unsigned is_one = (k[j] >> bit) & 1u;
            const unsigned i = static_cast<unsigned>(first + j);
            const unsigned to = is_one ? total_zeros + ones_before : i - ones_before;
            ones_before += is_one;
            tile_keys[padded(static_cast<int>(to))] = k[j];
            if constexpr (kWithValues) tile_values[padded(static_cast<int>(to))] = v[j];
        }
        __syncthreads();
        for (int j = 0; j < kKeysPerThread; ++j) {
            k[j] = tile_keys[padded(first + j)];
            if constexpr (kWithValues) v[j] = tile_values[padded(first + j)];
        }
        __syncthreads();  // all reads done before the next split writes
    }

    // Where each digit's run starts in the sorted tile.
    for (int j = 0; j < kKeysPerThread; ++j) {
        const int i = j * kThreadsPerBlock + static_cast<int>(threadIdx.x);
        const unsigned d = digit_of(tile_keys[padded(i)], shift);
        if (i == 0 || digit_of(tile_keys[padded(i - 1)], shift) != d) digit_start[d] = static_cast<unsigned>(i);
    }
    __syncthreads();
    for (int j = 0; j < kKeysPerThread; ++j) {
        const int i = j * kThreadsPerBlock + static_cast<int>(threadIdx.x);
        if (i >= valid) continue;
        const std::uint32_t key = tile_keys[padded(i)];
        const unsigned d = digit_of(key, shift);
        const std::size_t to = offsets[static_cast<std::size_t>(d) * gridDim.x + blockIdx.x] + (i - digit_start[d]);
        keys_out[to] = key;
        if constexpr (kWithValues) values_out[to] = tile_values[padded(i)];
    }
}

std::size_t round_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

struct Workspace {
    std::uint32_t* keys;
    std::uint32_t* values;
    unsigned* counts;
    unsigned* scratch;
};

Workspace carve(void* workspace, std::size_t n) {
    auto* p = static_cast<char*>(workspace);
    const std::size_t counts = static_cast<std::size_t>(kRadix) * blocks_for(n, kTile);
    Workspace w{};
    w.keys = reinterpret_cast<std::uint32_t*>(p);
    p += round_up(n * sizeof(std::uint32_t));
    w.values = reinterpret_cast<std::uint32_t*>(p);
    p += round_up(n * sizeof(std::uint32_t));
    w.counts = reinterpret_cast<unsigned*>(p);
    p += round_up(counts * sizeof(unsigned));
    w.scratch = reinterpret_cast<unsigned*>(p);
    return w;
}

template <bool kWithValues>
void radix_sort(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                std::uint32_t* values_out, std::size_t n, void* workspace) {
    if (n == 0) return;
    const Workspace w = carve(workspace, n);
    const std::size_t blocks = blocks_for(n, kTile);
    const std::size_t counts = static_cast<std::size_t>(kRadix) * blocks;
    const std::uint32_t* src_keys = keys_in;
    const std::uint32_t* src_values = values_in;
    for (int pass = 0; pass < kPasses; ++pass) {
        // Ping-pong between the workspace and the output so that the last pass lands in the output.
        const bool into_output = (kPasses - 1 - pass) % 2 == 0;
        std::uint32_t* dst_keys = into_output ? keys_out : w.keys;
        std::uint32_t* dst_values = into_output ? values_out : w.values;
        const int shift = pass * kDigitBits;
        histogram_kernel<<<static_cast<unsigned>(blocks), kThreadsPerBlock>>>(src_keys, n, shift, w.counts);
        LABKIT_CHECK_LAUNCH();
        exclusive_scan(w.counts, counts, w.scratch);
        scatter_kernel<kWithValues><<<static_cast<unsigned>(blocks), kThreadsPerBlock>>>(
            src_keys, src_values, dst_keys, dst_values, n, shift, w.counts);
        LABKIT_CHECK_LAUNCH();
        src_keys = dst_keys;
        src_values = dst_values;
    }
}

}  // namespace
// END SOLUTION

std::size_t sort_workspace_bytes(std::size_t n) {
    // BEGIN SOLUTION
    const std::size_t counts = static_cast<std::size_t>(kRadix) * blocks_for(n, kTile);
    return 2 * round_up(n * sizeof(std::uint32_t)) + round_up(counts * sizeof(unsigned)) +
           round_up(scan_scratch_count(counts) * sizeof(unsigned));
    // END SOLUTION
    // STARTER: // TODO 1: return the bytes your sort needs besides its output: room to
    // STARTER: // ping-pong the keys (and values) between passes, the per-block digit counts,
    // STARTER: // and whatever the scan of those counts needs.
    // STARTER: (void)n;
    // STARTER: return 0;
}

void sort_keys(const std::uint32_t* keys_in, std::uint32_t* keys_out, std::size_t n, void* workspace) {
    // BEGIN SOLUTION
    radix_sort<false>(keys_in, nullptr, keys_out, nullptr, n, workspace);
    // END SOLUTION
    // STARTER: // TODO 2: an LSD radix sort. For each digit, from the lowest: count each
    // STARTER: // block's digits (a histogram in shared memory), scan the counts of all
    // STARTER: // blocks digit by digit, and scatter each key to its place, keeping equal
    // STARTER: // digits in their order (a stable split on a scan, lecture 8).
    // STARTER: (void)keys_in; (void)keys_out; (void)n; (void)workspace; (void)kTile;
}

void sort_pairs(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                std::uint32_t* values_out, std::size_t n, void* workspace) {
    // BEGIN SOLUTION
    radix_sort<true>(keys_in, values_in, keys_out, values_out, n, workspace);
    // END SOLUTION
    // STARTER: // TODO 3: the same sort, moving each value with its key. Radix sort is stable
    // STARTER: // when every pass is, so equal keys keep their input order.
    // STARTER: (void)keys_in; (void)values_in; (void)keys_out; (void)values_out; (void)n; (void)workspace;
}
