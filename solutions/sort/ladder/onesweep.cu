// Lab sort, ladder rung: onesweep radix sort (Adinets and Merrill, "Onesweep: a faster least
// significant digit radix sort for GPUs", 2022): 8-bit digits, so 4 passes, and one kernel
// per pass that reads the keys once and writes them once.
//
// The solution's pass reads the keys twice: once to count every tile's digits, once more to
// scatter them after a scan over all the counts. Onesweep removes both the first read and the
// separate scan:
//   - The digit counts of the whole array do not depend on the pass order, so one kernel
//     reads the keys once, up front, and counts all four digits (a shared-memory histogram
//     per block, added into 4 x 256 global counters); a tiny kernel scans each pass's 256
//     counts into where each digit's keys start in that pass's output.
//   - A pass is then one kernel: a block takes a tile of 3840 keys, ranks them by the digit
//     within the tile (stably: warps count with ballots, in input order), and needs only how
//     many keys of each digit the earlier tiles hold. It gets that by decoupled look-back
//     (the scan lab's single-pass scan, one scan per digit): it publishes its own counts at
//     once ("aggregate available"), walks back over the earlier tiles adding their counts
//     until it meets one that published its full prefix ("prefix available"), then publishes
//     its own prefix. Tiles are numbered by an atomic ticket in the order blocks start, not
//     by blockIdx, so a tile only ever waits on tiles whose blocks are already running.
//   - The block then writes the tile sorted by digit into shared memory and copies it out
//     in order, so the keys of one digit go to consecutive addresses.
// Per key: 1 read for the histograms, then 4 passes of 1 read and 1 write (9 key streams);
// the solution's 8 passes of 2 reads and 1 write make 24.
#include <cuda/atomic>  // cuda::atomic_ref: look-back words are read while other blocks write them

#include <cstdint>

#include "labkit/check.hpp"
#include "sort.hpp"

namespace {

constexpr int kDigitBits = 8;
constexpr int kRadix = 1 << kDigitBits;
constexpr int kPasses = 32 / kDigitBits;
constexpr int kThreadsPerBlock = 256;  // one thread per digit where a block works digit by digit
constexpr int kKeysPerThread = 15;
constexpr int kTile = kThreadsPerBlock * kKeysPerThread;  // 3840 keys
constexpr int kWarpSize = 32;
constexpr int kWarps = kThreadsPerBlock / kWarpSize;
constexpr int kKeysPerWarp = kKeysPerThread * kWarpSize;
constexpr unsigned kFullWarp = 0xffffffffu;
static_assert(kThreadsPerBlock == kRadix, "a pass gives each digit's look-back and scan to its own thread");

// The histogram kernel: keys a thread loads at once (in flight together), and at most about
// a GPU's worth of blocks, so that the blocks' 1024 global additions each stay few.
constexpr int kHistogramKeysPerThread = 16;
constexpr std::size_t kHistogramBlocks = 1024;

// A look-back word: the state in its top two bits, a count of keys in the others. Zero (the
// memset) means nothing published yet; kAggregate, the count is this tile's own keys of the
// digit; kPrefix, the count is those of this tile and of every earlier one. One word holds
// both, so a reader never sees a state without its count. 32-bit words hold counts below
// 2^30; a larger n takes 64-bit words.
template <typename Word>
struct Lookback {
    static constexpr int kCountBits = 8 * static_cast<int>(sizeof(Word)) - 2;
    static constexpr Word kAggregate = Word(1) << kCountBits;
    static constexpr Word kPrefix = Word(2) << kCountBits;
    static constexpr Word kCountMask = kAggregate - 1;
};

// Look-back words are written by one block and polled by others. Atomic, so a poll is never
// served a stale copy and never sees half a word; relaxed, since the word carries its own
// count and nothing else is read on the strength of it.
template <typename Word>
__device__ __forceinline__ Word load_state(Word* word) {
    return cuda::atomic_ref<Word, cuda::thread_scope_device>(*word).load(cuda::memory_order_relaxed);
}

template <typename Word>
__device__ __forceinline__ void store_state(Word* word, Word value) {
    cuda::atomic_ref<Word, cuda::thread_scope_device>(*word).store(value, cuda::memory_order_relaxed);
}

// Pause between polls of a tile that has published nothing yet, so that the waiting threads
// do not crowd L2 with polls of words that every later tile polls too. Not tuned (the scan
// lab's measurements found the pause length to matter little).
constexpr unsigned kPollDelayNs = 256;

// Exclusive scan of one value per thread across the block; *total gets the block's sum.
__device__ unsigned block_exclusive_scan(unsigned value, unsigned* total) {
    __shared__ unsigned warp_sums[kWarps];
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize, warp = static_cast<int>(threadIdx.x) / kWarpSize;
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

// counts[p * 256 + d] += how many keys have digit d in pass p, for all four passes from one
// read of the keys: each block counts its share in shared memory, then adds its counts in.
__global__ void __launch_bounds__(kThreadsPerBlock) histogram_kernel(const std::uint32_t* keys, std::size_t n,
                                                                    unsigned* counts) {
    __shared__ unsigned block_counts[kPasses * kRadix];
    for (int i = static_cast<int>(threadIdx.x); i < kPasses * kRadix; i += kThreadsPerBlock) block_counts[i] = 0;
    __syncthreads();
    const std::size_t step = static_cast<std::size_t>(kThreadsPerBlock) * kHistogramKeysPerThread;
    for (std::size_t base = blockIdx.x * step; base < n; base += gridDim.x * step) {
        std::uint32_t k[kHistogramKeysPerThread];
#pragma unroll
        for (int j = 0; j < kHistogramKeysPerThread; ++j) {
            const std::size_t i = base + static_cast<std::size_t>(j) * kThreadsPerBlock + threadIdx.x;
            k[j] = i < n ? keys[i] : 0u;
        }
#pragma unroll
        for (int j = 0; j < kHistogramKeysPerThread; ++j) {
            if (base + static_cast<std::size_t>(j) * kThreadsPerBlock + threadIdx.x >= n) break;
#pragma unroll
            for (int p = 0; p < kPasses; ++p)
                atomicAdd(&block_counts[p * kRadix + ((k[j] >> (p * kDigitBits)) & (kRadix - 1))], 1u);
        }
    }
    __syncthreads();
    for (int i = static_cast<int>(threadIdx.x); i < kPasses * kRadix; i += kThreadsPerBlock)
        if (block_counts[i] != 0) atomicAdd(&counts[i], block_counts[i]);
}

// counts[p * 256 + d] becomes where the keys of digit d start in pass p's output: the
// exclusive scan of that pass's counts. One block per pass, one thread per digit.
__global__ void __launch_bounds__(kRadix) digit_starts_kernel(unsigned* counts) {
    unsigned* pass_counts = counts + static_cast<std::size_t>(blockIdx.x) * kRadix;
    unsigned total = 0;
    pass_counts[threadIdx.x] = block_exclusive_scan(pass_counts[threadIdx.x], &total);
}

// One pass: the keys (and values) of one tile go from *_in to their places in *_out, sorted
// stably by the digit at `shift`. digit_starts: this pass's 256 digit starts; lookback: this
// pass's words, 256 per tile; tile_ticket: this pass's counter of tiles handed out. Three
// blocks per SM (at most 80 registers; left alone, the compiler takes 96 to 111, two blocks)
// keep enough loads in flight to hide memory latency.
template <bool kWithValues, typename Word>
__global__ void __launch_bounds__(kThreadsPerBlock, 3)
    onesweep_pass_kernel(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                         std::uint32_t* values_out, std::size_t n, int shift, const unsigned* digit_starts,
                         Word* lookback, unsigned* tile_ticket) {
    using State = Lookback<Word>;
    __shared__ unsigned tile_index;
    __shared__ unsigned warp_digit_counts[kWarps][kRadix];  // counts, then each warp's start in its digit
    __shared__ unsigned tile_digit_starts[kRadix];          // where each digit starts in the sorted tile
    __shared__ unsigned scatter_offsets[kRadix];            // output place minus place in the sorted tile
    __shared__ std::uint32_t staging[kTile];                // the tile sorted by digit

    const int lane = static_cast<int>(threadIdx.x) % kWarpSize, warp = static_cast<int>(threadIdx.x) / kWarpSize;
    const unsigned my_digit = threadIdx.x;  // the digit this thread counts, scans and looks back for
    if (threadIdx.x == 0) tile_index = atomicAdd(tile_ticket, 1u);
    for (int w = 0; w < kWarps; ++w) warp_digit_counts[w][my_digit] = 0;
    const unsigned digit_start = digit_starts[my_digit];
    __syncthreads();
    const unsigned tile = tile_index;
    const std::size_t tile_begin = static_cast<std::size_t>(tile) * kTile;
    const int valid = static_cast<int>(n - tile_begin < static_cast<std::size_t>(kTile) ? n - tile_begin : kTile);

    // Warp w loads keys w * 480 .. w * 480 + 479 of the tile, lane by lane in 15 rows: warp
    // order, then row order, then lane order is input order, which the ranking keeps.
    const int warp_begin = warp * kKeysPerWarp;
    std::uint32_t keys[kKeysPerThread];
#pragma unroll
    for (int j = 0; j < kKeysPerThread; ++j) {
        const int i = warp_begin + j * kWarpSize + lane;
        keys[j] = i < valid ? keys_in[tile_begin + i] : 0u;
    }

    // Rank each key among the warp's keys of its digit. Per row: the lanes holding the same
    // digit (its peers) are found with one ballot per digit bit; the highest peer adds them
    // all to the warp's count of that digit, and each key's rank is the count before the row
    // plus its peers in lower lanes. Keys past the end of the array form a group of their own
    // that counts nowhere.
    const unsigned lanes_below = (1u << lane) - 1u;
    unsigned rank[kKeysPerThread];
#pragma unroll
    for (int j = 0; j < kKeysPerThread; ++j) {
        const bool real = warp_begin + j * kWarpSize + lane < valid;
        const unsigned digit = (keys[j] >> shift) & (kRadix - 1);
        unsigned peers = kFullWarp;
        if (valid < kTile) {  // the same for the whole block: only the last tile has keys missing
            const unsigned real_lanes = __ballot_sync(kFullWarp, real);
            peers = real ? real_lanes : ~real_lanes;
        }
#pragma unroll
        for (int bit = 0; bit < kDigitBits; ++bit) {
            const bool one = (digit >> bit) & 1u;
            const unsigned ones = __ballot_sync(kFullWarp, one);
            peers &= one ? ones : ~ones;
        }
        const int leader = kWarpSize - 1 - __clz(static_cast<int>(peers));
        unsigned before = 0;
        if (real && lane == leader) before = warp_digit_counts[warp][digit];
        before = __shfl_sync(kFullWarp, before, leader);
        rank[j] = before + static_cast<unsigned>(__popc(peers & lanes_below));
        if (real && lane == leader) warp_digit_counts[warp][digit] = before + static_cast<unsigned>(__popc(peers));
        __syncwarp();  // the count is updated before the next row reads it
    }
    __syncthreads();

    // Thread d: the tile's count of digit d, and where each warp's keys of d start among them.
    unsigned tile_count = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
        const unsigned count = warp_digit_counts[w][my_digit];
        warp_digit_counts[w][my_digit] = tile_count;
        tile_count += count;
    }
    // Publish the count at once, so that later tiles can add it and look further back while
    // this one is still working. Tile 0 has no earlier tiles: its count is its prefix.
    Word* my_state = lookback + static_cast<std::size_t>(tile) * kRadix + my_digit;
    store_state(my_state, (tile == 0 ? State::kPrefix : State::kAggregate) | tile_count);

    // The tile sorted by digit, in shared memory: a key goes to its digit's start in the tile,
    // plus the earlier warps' keys of that digit, plus its rank in its warp.
    unsigned tile_total = 0;
    const unsigned tile_digit_start = block_exclusive_scan(tile_count, &tile_total);
    tile_digit_starts[my_digit] = tile_digit_start;
    __syncthreads();
    unsigned place[kKeysPerThread];
#pragma unroll
    for (int j = 0; j < kKeysPerThread; ++j) {
        if (warp_begin + j * kWarpSize + lane < valid) {
            const unsigned digit = (keys[j] >> shift) & (kRadix - 1);
            place[j] = tile_digit_starts[digit] + warp_digit_counts[warp][digit] + rank[j];
            staging[place[j]] = keys[j];
        }
    }

    // Decoupled look-back for digit d: add the earlier tiles' counts, newest first, until one
    // holds its whole prefix. Each earlier tile belongs to a block that took its ticket before
    // this one and publishes before it waits on anything, so every wait ends.
    Word earlier_count = 0;
    if (tile > 0) {
        for (unsigned earlier = tile - 1;; --earlier) {
            Word* state = lookback + static_cast<std::size_t>(earlier) * kRadix + my_digit;
            Word word = load_state(state);
            while (word == 0) {
                __nanosleep(kPollDelayNs);
                word = load_state(state);
            }
            earlier_count += word & State::kCountMask;
            if (word & State::kPrefix) break;
        }
        store_state(my_state, State::kPrefix | (earlier_count + tile_count));
    }
    // Modulo 2^32 the difference may wrap; the sum with a place in the tile is the true output
    // index, below n < 2^32.
    scatter_offsets[my_digit] = digit_start + static_cast<unsigned>(earlier_count) - tile_digit_start;
    __syncthreads();

    // Copy the sorted tile out in order: consecutive threads write consecutive places of one
    // digit's run, so the writes coalesce into runs of about 15 keys (3840 / 256).
    unsigned out_index[kKeysPerThread];
#pragma unroll
    for (int j = 0; j < kKeysPerThread; ++j) {
        const int i = j * kThreadsPerBlock + static_cast<int>(threadIdx.x);
        if (i < valid) {
            const std::uint32_t key = staging[i];
            out_index[j] = scatter_offsets[(key >> shift) & (kRadix - 1)] + static_cast<unsigned>(i);
            keys_out[out_index[j]] = key;
        }
    }

    // The values make the same moves: staged at their keys' places, copied to the same indices.
    if constexpr (kWithValues) {
        std::uint32_t values[kKeysPerThread];
#pragma unroll
        for (int j = 0; j < kKeysPerThread; ++j) {
            const int i = warp_begin + j * kWarpSize + lane;
            values[j] = i < valid ? values_in[tile_begin + i] : 0u;
        }
        __syncthreads();  // every key has been read out of staging
#pragma unroll
        for (int j = 0; j < kKeysPerThread; ++j)
            if (warp_begin + j * kWarpSize + lane < valid) staging[place[j]] = values[j];
        __syncthreads();
#pragma unroll
        for (int j = 0; j < kKeysPerThread; ++j) {
            const int i = j * kThreadsPerBlock + static_cast<int>(threadIdx.x);
            if (i < valid) values_out[out_index[j]] = staging[i];
        }
    }
}

std::size_t blocks_for(std::size_t m, std::size_t per_block) { return (m + per_block - 1) / per_block; }

std::size_t round_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

bool needs_wide_lookback(std::size_t n) { return n > Lookback<std::uint32_t>::kCountMask; }

// Every pass's look-back words: 256 per tile.
std::size_t lookback_bytes(std::size_t n) {
    const std::size_t word = needs_wide_lookback(n) ? sizeof(std::uint64_t) : sizeof(std::uint32_t);
    return round_up(static_cast<std::size_t>(kPasses) * blocks_for(n, kTile) * kRadix * word);
}

// The keys and values between passes, then what must start at zero: the look-back words, the
// digit counts and the tile tickets, side by side so that one memset clears them.
struct Workspace {
    std::uint32_t* keys;
    std::uint32_t* values;
    void* lookback;
    unsigned* counts;   // kPasses x kRadix
    unsigned* tickets;  // kPasses
    std::size_t cleared_bytes;
};

Workspace carve(void* workspace, std::size_t n) {
    auto* p = static_cast<char*>(workspace);
    Workspace w{};
    w.keys = reinterpret_cast<std::uint32_t*>(p);
    p += round_up(n * sizeof(std::uint32_t));
    w.values = reinterpret_cast<std::uint32_t*>(p);
    p += round_up(n * sizeof(std::uint32_t));
    w.lookback = p;
    p += lookback_bytes(n);
    w.counts = reinterpret_cast<unsigned*>(p);
    w.tickets = w.counts + kPasses * kRadix;
    w.cleared_bytes = lookback_bytes(n) + (kPasses * kRadix + kPasses) * sizeof(unsigned);
    return w;
}

template <bool kWithValues, typename Word>
void onesweep_sort(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                   std::uint32_t* values_out, std::size_t n, void* workspace) {
    const Workspace w = carve(workspace, n);
    const std::size_t tiles = blocks_for(n, kTile);
    LABKIT_CHECK(cudaMemsetAsync(w.lookback, 0, w.cleared_bytes));
    const std::size_t histogram_steps = blocks_for(n, static_cast<std::size_t>(kThreadsPerBlock) * kHistogramKeysPerThread);
    const std::size_t histogram_blocks = histogram_steps < kHistogramBlocks ? histogram_steps : kHistogramBlocks;
    histogram_kernel<<<static_cast<unsigned>(histogram_blocks), kThreadsPerBlock>>>(keys_in, n, w.counts);
    LABKIT_CHECK_LAUNCH();
    digit_starts_kernel<<<kPasses, kRadix>>>(w.counts);
    LABKIT_CHECK_LAUNCH();
    const std::uint32_t* src_keys = keys_in;
    const std::uint32_t* src_values = values_in;
    for (int pass = 0; pass < kPasses; ++pass) {
        // Ping-pong between the workspace and the output; with 4 passes the last lands in the output.
        std::uint32_t* dst_keys = pass % 2 == 0 ? w.keys : keys_out;
        std::uint32_t* dst_values = pass % 2 == 0 ? w.values : values_out;
        Word* pass_lookback = static_cast<Word*>(w.lookback) + static_cast<std::size_t>(pass) * tiles * kRadix;
        onesweep_pass_kernel<kWithValues, Word><<<static_cast<unsigned>(tiles), kThreadsPerBlock>>>(
            src_keys, src_values, dst_keys, dst_values, n, pass * kDigitBits, w.counts + pass * kRadix, pass_lookback,
            w.tickets + pass);
        LABKIT_CHECK_LAUNCH();
        src_keys = dst_keys;
        src_values = dst_values;
    }
}

template <bool kWithValues>
void radix_sort(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                std::uint32_t* values_out, std::size_t n, void* workspace) {
    if (n == 0) return;
    if (needs_wide_lookback(n))
        onesweep_sort<kWithValues, std::uint64_t>(keys_in, values_in, keys_out, values_out, n, workspace);
    else
        onesweep_sort<kWithValues, std::uint32_t>(keys_in, values_in, keys_out, values_out, n, workspace);
}

}  // namespace

std::size_t sort_workspace_bytes(std::size_t n) {
    return 2 * round_up(n * sizeof(std::uint32_t)) + lookback_bytes(n) +
           (kPasses * kRadix + kPasses) * sizeof(unsigned);
}

void sort_keys(const std::uint32_t* keys_in, std::uint32_t* keys_out, std::size_t n, void* workspace) {
    radix_sort<false>(keys_in, nullptr, keys_out, nullptr, n, workspace);
}

void sort_pairs(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                std::uint32_t* values_out, std::size_t n, void* workspace) {
    radix_sort<true>(keys_in, values_in, keys_out, values_out, n, workspace);
}
