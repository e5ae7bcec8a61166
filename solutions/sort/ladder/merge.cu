// Lab sort, ladder rung: merge sort in lecture 8's three stages. A merge of two sorted runs
// splits across threads with no talk between them: of the first d outputs, some i come from
// the left run and d - i from the right, and i is where the merge path (the walk through the
// grid with the left run down one side and the right run along the other) crosses the
// cross-diagonal d, found by a binary search along it. So a thread, or a block, can start
// merging at any output position on its own. The stages differ in how many merges there
// are to share out:
//   1. Many tiny sorts: each block sorts a 4096-key tile in shared memory (16 keys per
//      thread sorted in registers, then 8 rounds of merges inside the block, each thread
//      merging 16 outputs from its own merge-path split).
//   2. Many merges: runs are merged pairwise, one block per merge, the block walking its
//      merge 4096 outputs at a time (one merge-path search per step, in global memory, by a
//      warp testing 32 points at once; its threads split each step by merge path in shared
//      memory, as in stage 1).
//   3. Few merges: a block per merge would now leave SMs idle (at the end, one block would
//      do the whole last merge), so each merge is cut into 4096-output chunks at splitters
//      found by merge path, one block per chunk: every round runs n / 4096 blocks, however
//      few runs are left.
// On equal keys the left run's key goes first, and it came first in the input, so the sort
// is stable. Each round reads and writes every key once: log2(n / 4096) rounds after the
// tile sorts, 16 at n = 2^28, against 8 passes of about three key-streams for the radix sort.
#include <cstdint>
#include <utility>

#include "labkit/check.hpp"
#include "sort.hpp"

namespace {

constexpr int kThreadsPerBlock = 256;
constexpr int kItemsPerThread = 16;
constexpr int kTile = kThreadsPerBlock * kItemsPerThread;  // keys of a stage-1 tile, outputs of a stage-2/3 step
constexpr int kWarpSize = 32;
constexpr unsigned kFullWarp = 0xffffffffu;

// Stage 2 runs while there are this many merges per block the GPU holds at once: a block per
// merge then leaves SMs idle only in its last, partial wave of blocks.
constexpr std::size_t kWavesForBlockPerMerge = 4;

// Shared-memory index with one word of padding every 32, so that thread t touching its 16
// consecutive items (t * 16 + i) meets no bank conflicts.
__device__ __forceinline__ int padded(int i) { return i + (i >> 5); }
constexpr int kPaddedTile = kTile + kTile / 32;

// The merge path: of the first `diag` outputs of merging runs a and b, how many come from a.
// a(mid) is among them exactly when it does not come after b(diag - 1 - mid); on equal keys
// a's comes first (stability). a and b map an index in the run to its key.
template <typename Index, typename KeyOfA, typename KeyOfB>
__device__ Index merge_path(Index diag, Index a_length, Index b_length, KeyOfA a, KeyOfB b) {
    Index lo = diag > b_length ? diag - b_length : 0;
    Index hi = diag < a_length ? diag : a_length;
    while (lo < hi) {
        const Index mid = lo + (hi - lo) / 2;
        if (a(mid) <= b(diag - 1 - mid)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// One thread's share of a merge in shared memory: the outputs [diag, diag + count) of merging
// the adjacent sorted runs tile[a_begin, a_end) and tile[a_end, b_end), into registers;
// from[i] is where output i sits in the tile, for fetching its value.
__device__ __forceinline__ void merge_in_shared(const std::uint32_t* tile, int a_begin, int a_end, int b_end, int diag,
                                                int count, std::uint32_t (&keys)[kItemsPerThread],
                                                int (&from)[kItemsPerThread]) {
    const int from_a = merge_path(
        diag, a_end - a_begin, b_end - a_end, [&](int i) { return tile[padded(a_begin + i)]; },
        [&](int i) { return tile[padded(a_end + i)]; });
    int a = a_begin + from_a, b = a_end + (diag - from_a);
    std::uint32_t a_key = a < a_end ? tile[padded(a)] : 0u;
    std::uint32_t b_key = b < b_end ? tile[padded(b)] : 0u;
#pragma unroll
    for (int i = 0; i < kItemsPerThread; ++i) {
        if (i >= count) break;
        const bool take_a = b >= b_end || (a < a_end && a_key <= b_key);
        keys[i] = take_a ? a_key : b_key;
        from[i] = take_a ? a : b;
        if (take_a) {
            ++a;
            a_key = a < a_end ? tile[padded(a)] : 0u;
        } else {
            ++b;
            b_key = b < b_end ? tile[padded(b)] : 0u;
        }
    }
}

// Stage 1: keys_out[tile] = the block's 4096 keys of keys_in, sorted stably.
template <bool kWithValues>
__global__ void __launch_bounds__(kThreadsPerBlock)
    block_sort_kernel(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                      std::uint32_t* values_out, std::size_t n) {
    __shared__ std::uint32_t tile_keys[kPaddedTile];
    __shared__ std::uint32_t tile_values[kWithValues ? kPaddedTile : 1];
    const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kTile;
    const int valid = static_cast<int>(n - base < static_cast<std::size_t>(kTile) ? n - base : kTile);

    // Coalesced loads. Past the end: the largest key, which the stable sort puts after every
    // real key (even a real 2^32 - 1, which came before it), and which is never written.
    for (int j = 0; j < kItemsPerThread; ++j) {
        const int i = j * kThreadsPerBlock + static_cast<int>(threadIdx.x);
        tile_keys[padded(i)] = i < valid ? keys_in[base + i] : 0xffffffffu;
        if constexpr (kWithValues) tile_values[padded(i)] = i < valid ? values_in[base + i] : 0u;
    }
    __syncthreads();

    // Each thread sorts its 16 consecutive keys in registers: odd-even transposition, which
    // swaps only strictly greater neighbours and so is stable; 16 phases sort 16 keys.
    const int first = static_cast<int>(threadIdx.x) * kItemsPerThread;
    std::uint32_t k[kItemsPerThread], v[kItemsPerThread];
#pragma unroll
    for (int i = 0; i < kItemsPerThread; ++i) {
        k[i] = tile_keys[padded(first + i)];
        v[i] = kWithValues ? tile_values[padded(first + i)] : 0u;
    }
#pragma unroll
    for (int phase = 0; phase < kItemsPerThread; ++phase) {
#pragma unroll
        for (int i = phase % 2; i + 1 < kItemsPerThread; i += 2) {
            if (k[i] > k[i + 1]) {
                const std::uint32_t key = k[i], value = v[i];
                k[i] = k[i + 1];
                v[i] = v[i + 1];
                k[i + 1] = key;
                v[i + 1] = value;
            }
        }
    }

    // Runs of 16, 32, ... 2048 merged pairwise; a thread makes outputs first .. first + 15 of
    // the merge its position falls in.
    for (int run = kItemsPerThread; run < kTile; run *= 2) {
        __syncthreads();  // every thread has read the previous round's tile
#pragma unroll
        for (int i = 0; i < kItemsPerThread; ++i) {
            tile_keys[padded(first + i)] = k[i];
            if constexpr (kWithValues) tile_values[padded(first + i)] = v[i];
        }
        __syncthreads();
        const int pair_begin = first / (2 * run) * (2 * run);
        int from[kItemsPerThread];
        merge_in_shared(tile_keys, pair_begin, pair_begin + run, pair_begin + 2 * run, first - pair_begin,
                        kItemsPerThread, k, from);
        if constexpr (kWithValues) {
#pragma unroll
            for (int i = 0; i < kItemsPerThread; ++i) v[i] = tile_values[padded(from[i])];
        }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kItemsPerThread; ++i) {
        tile_keys[padded(first + i)] = k[i];
        if constexpr (kWithValues) tile_values[padded(first + i)] = v[i];
    }
    __syncthreads();
    for (int j = 0; j < kItemsPerThread; ++j) {
        const int i = j * kThreadsPerBlock + static_cast<int>(threadIdx.x);
        if (i < valid) {
            keys_out[base + i] = tile_keys[padded(i)];
            if constexpr (kWithValues) values_out[base + i] = tile_values[padded(i)];
        }
    }
}

// The two runs of one merge of a round: [a_begin, a_begin + a_length) and the run right
// after it; the last merge of a round may have a short right run, or none.
struct MergeRuns {
    std::size_t a_begin, a_length, b_begin, b_length;
};

__device__ MergeRuns merge_runs(std::size_t a_begin, std::size_t run, std::size_t n) {
    MergeRuns m{};
    m.a_begin = a_begin;
    m.a_length = n - a_begin < run ? n - a_begin : run;
    m.b_begin = a_begin + m.a_length;
    m.b_length = n - m.b_begin < run ? n - m.b_begin : run;
    return m;
}

// Where the merge path of m crosses cross-diagonal `diag`, searched in global memory by a
// whole warp (every lane calls it, and every lane gets the answer). A binary search would
// wait on one memory latency per halving: 28 of them on the last merge at n = 2^28. Each
// step here tests 32 points spread over the range at once and keeps the stretch between the
// last "a first" and the first "b first", about 1/31 of it: 6 latencies at most.
__device__ std::size_t merge_path_warp(const std::uint32_t* keys, const MergeRuns& m, std::size_t diag) {
    const unsigned lane = threadIdx.x % kWarpSize;
    std::size_t lo = diag > m.b_length ? diag - m.b_length : 0;
    std::size_t hi = diag < m.a_length ? diag : m.a_length;
    while (lo < hi) {
        // Test points lo .. hi - 1, the first and the last included; from 32 candidates on
        // they cover every one, and the step ends the search.
        const std::size_t span = hi - lo;
        auto point = [&](unsigned l) { return lo + (span - 1) * l / (kWarpSize - 1); };
        const std::size_t i = point(lane);
        const bool a_first = keys[m.a_begin + i] <= keys[m.b_begin + (diag - 1 - i)];
        const int a_firsts = __popc(__ballot_sync(kFullWarp, a_first));  // true for lanes 0 .. a_firsts - 1
        const std::size_t new_lo = a_firsts == 0 ? lo : point(a_firsts - 1) + 1;
        const std::size_t new_hi = a_firsts == kWarpSize ? hi : point(a_firsts);
        lo = new_lo;
        hi = new_hi;
    }
    return lo;
}

// Stages 2 and 3: outputs [d0, d1) (at most 4096) of merge m, whose path crosses the
// cross-diagonals d0 and d1 at a0 and a1. Exactly keys a0 .. a1 - 1 of the left run and
// d0 - a0 .. d1 - a1 - 1 of the right make these outputs, so both windows go to shared memory
// (side by side, a sorted run each), the block merges them as in stage 1, and writes the
// outputs coalesced. Ends with a barrier, so the caller may reuse the tile.
template <bool kWithValues>
__device__ void merge_chunk(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                            std::uint32_t* values_out, const MergeRuns& m, std::size_t d0, std::size_t a0,
                            std::size_t d1, std::size_t a1, std::uint32_t* tile_keys, std::uint32_t* tile_values) {
    const int from_a = static_cast<int>(a1 - a0);
    const int count = static_cast<int>(d1 - d0);
    const std::size_t b0 = d0 - a0;
    for (int i = static_cast<int>(threadIdx.x); i < count; i += kThreadsPerBlock) {
        const std::size_t at = i < from_a ? m.a_begin + a0 + i : m.b_begin + b0 + (i - from_a);
        tile_keys[padded(i)] = keys_in[at];
        if constexpr (kWithValues) tile_values[padded(i)] = values_in[at];
    }
    __syncthreads();

    const int first = static_cast<int>(threadIdx.x) * kItemsPerThread;
    const int mine = count - first < kItemsPerThread ? count - first : kItemsPerThread;  // may be <= 0
    std::uint32_t k[kItemsPerThread], v[kItemsPerThread];
    int from[kItemsPerThread];
    if (mine > 0) {
        merge_in_shared(tile_keys, 0, from_a, count, first, mine, k, from);
        if constexpr (kWithValues) {
#pragma unroll
            for (int i = 0; i < kItemsPerThread; ++i)
                if (i < mine) v[i] = tile_values[padded(from[i])];
        }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kItemsPerThread; ++i) {
        if (i < mine) {
            tile_keys[padded(first + i)] = k[i];
            if constexpr (kWithValues) tile_values[padded(first + i)] = v[i];
        }
    }
    __syncthreads();
    const std::size_t out = m.a_begin + d0;  // the merge's outputs start where its left run did
    for (int i = static_cast<int>(threadIdx.x); i < count; i += kThreadsPerBlock) {
        keys_out[out + i] = tile_keys[padded(i)];
        if constexpr (kWithValues) values_out[out + i] = tile_values[padded(i)];
    }
    __syncthreads();
}

// Stage 2: block b merges the runs at b * 2 * run and b * 2 * run + run, 4096 outputs a step;
// each step's end is the next one's start, so one search (by warp 0) per step. (Left alone,
// the compiler gives the pairs kernel 120 registers, two blocks per SM; capped for four, it
// spills a few bytes.)
template <bool kWithValues>
__global__ void __launch_bounds__(kThreadsPerBlock, 4)
    block_per_merge_kernel(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                           std::uint32_t* values_out, std::size_t n, std::size_t run) {
    __shared__ std::uint32_t tile_keys[kPaddedTile];
    __shared__ std::uint32_t tile_values[kWithValues ? kPaddedTile : 1];
    __shared__ std::size_t step_end_split;
    const MergeRuns m = merge_runs(static_cast<std::size_t>(blockIdx.x) * 2 * run, run, n);
    const std::size_t total = m.a_length + m.b_length;
    std::size_t a0 = 0;
#pragma unroll 1
    for (std::size_t d0 = 0; d0 < total; d0 += kTile) {
        const std::size_t d1 = total - d0 < static_cast<std::size_t>(kTile) ? total : d0 + kTile;
        if (threadIdx.x < kWarpSize) {
            const std::size_t split = merge_path_warp(keys_in, m, d1);
            if (threadIdx.x == 0) step_end_split = split;
        }
        __syncthreads();
        const std::size_t a1 = step_end_split;
        merge_chunk<kWithValues>(keys_in, values_in, keys_out, values_out, m, d0, a0, d1, a1, tile_keys, tile_values);
        a0 = a1;
    }
}

// Stage 3: block b makes outputs [b * 4096, b * 4096 + 4096) of the round, which lie in one
// merge (a merge's 2 * run outputs are a whole number of chunks); warps 0 and 1 search its
// two splitters side by side.
template <bool kWithValues>
__global__ void __launch_bounds__(kThreadsPerBlock)
    split_merge_kernel(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                       std::uint32_t* values_out, std::size_t n, std::size_t run) {
    __shared__ std::uint32_t tile_keys[kPaddedTile];
    __shared__ std::uint32_t tile_values[kWithValues ? kPaddedTile : 1];
    __shared__ std::size_t splits[2];
    const std::size_t out_begin = static_cast<std::size_t>(blockIdx.x) * kTile;
    const MergeRuns m = merge_runs(out_begin / (2 * run) * (2 * run), run, n);
    const std::size_t total = m.a_length + m.b_length;
    const std::size_t d0 = out_begin - m.a_begin;
    const std::size_t d1 = total - d0 < static_cast<std::size_t>(kTile) ? total : d0 + kTile;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    if (warp < 2) {
        const std::size_t split = merge_path_warp(keys_in, m, warp == 0 ? d0 : d1);
        if (threadIdx.x % kWarpSize == 0) splits[warp] = split;
    }
    __syncthreads();
    merge_chunk<kWithValues>(keys_in, values_in, keys_out, values_out, m, d0, splits[0], d1, splits[1], tile_keys,
                             tile_values);
}

std::size_t blocks_for(std::size_t m, std::size_t per_block) { return (m + per_block - 1) / per_block; }

// How many blocks of `kernel` the GPU runs at once: its SMs times the blocks one SM holds.
template <typename Kernel>
std::size_t resident_blocks(Kernel kernel) {
    int device = 0, sms = 0, blocks_per_sm = 0;
    LABKIT_CHECK(cudaGetDevice(&device));
    LABKIT_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    LABKIT_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kThreadsPerBlock, 0));
    return static_cast<std::size_t>(sms) * static_cast<std::size_t>(blocks_per_sm > 0 ? blocks_per_sm : 1);
}

template <bool kWithValues>
void merge_sort(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                std::uint32_t* values_out, std::size_t n, void* workspace) {
    if (n == 0) return;
    auto* tmp_keys = static_cast<std::uint32_t*>(workspace);
    std::uint32_t* tmp_values = tmp_keys + n;
    int rounds = 0;
    for (std::size_t run = kTile; run < n; run *= 2) ++rounds;
    // Ping-pong between the output and the workspace so that the last round lands in the
    // output: with an odd number of rounds, stage 1 writes to the workspace.
    std::uint32_t* src_k = rounds % 2 ? tmp_keys : keys_out;
    std::uint32_t* src_v = rounds % 2 ? tmp_values : values_out;
    std::uint32_t* dst_k = rounds % 2 ? keys_out : tmp_keys;
    std::uint32_t* dst_v = rounds % 2 ? values_out : tmp_values;

    const std::size_t tiles = blocks_for(n, kTile);
    block_sort_kernel<kWithValues><<<static_cast<unsigned>(tiles), kThreadsPerBlock>>>(keys_in, values_in, src_k,
                                                                                       src_v, n);
    LABKIT_CHECK_LAUNCH();
    const std::size_t enough_merges = kWavesForBlockPerMerge * resident_blocks(block_per_merge_kernel<kWithValues>);
    for (std::size_t run = kTile; run < n; run *= 2) {
        const std::size_t merges = blocks_for(n, 2 * run);
        if (merges >= enough_merges) {
            block_per_merge_kernel<kWithValues>
                <<<static_cast<unsigned>(merges), kThreadsPerBlock>>>(src_k, src_v, dst_k, dst_v, n, run);
        } else {
            split_merge_kernel<kWithValues>
                <<<static_cast<unsigned>(tiles), kThreadsPerBlock>>>(src_k, src_v, dst_k, dst_v, n, run);
        }
        LABKIT_CHECK_LAUNCH();
        std::swap(src_k, dst_k);
        std::swap(src_v, dst_v);
    }
}

}  // namespace

std::size_t sort_workspace_bytes(std::size_t n) { return 2 * n * sizeof(std::uint32_t); }

void sort_keys(const std::uint32_t* keys_in, std::uint32_t* keys_out, std::size_t n, void* workspace) {
    merge_sort<false>(keys_in, nullptr, keys_out, nullptr, n, workspace);
}

void sort_pairs(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                std::uint32_t* values_out, std::size_t n, void* workspace) {
    merge_sort<true>(keys_in, values_in, keys_out, values_out, n, workspace);
}
