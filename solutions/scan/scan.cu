// Lab scan: inclusive and exclusive prefix sums of any length.
//
// What you practise here (lecture 4): a block scan (Hillis-Steele-Horn, then the
// work-efficient Blelloch scan), turning it into a scan of a vector of any length with
// the large-vector scheme (block scan, scan of the block sums, add back), and the
// exclusive variant. Lecture 9 explains why the float results may differ from the CPU's
// in the last bits, and by how much they may (the handout gives the tolerance).
//
// Float addition is not associative, so combine the block sums as a tree (a scan of the
// block sums), not as a carry passed from one small block to the next: such a chain
// rounds once per block, and when blocks take their carries in whatever order they run,
// the answer changes from run to run (the checker runs every float case twice and
// grades the worse run).
//
// Build and run:   cudalab run scan .          (checks every test case)
//                  cudalab run scan . --bench  (times it against the copy roof)
// BEGIN SOLUTION
#include <cuda/atomic>  // cuda::atomic_ref: tile status words are read while other blocks write them

#include <cstdint>  // std::uintptr_t, for the alignment test
// END SOLUTION

#include "labkit/check.hpp"
#include "scan.hpp"

namespace {

// BEGIN SOLUTION
// The reference solution: a single-pass scan with decoupled look-back (Merrill and
// Garland, "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016). The
// three-kernel scheme reads and writes the vector twice; this reads it once and writes
// it once, which is all a memory-bound scan can hope for.
//
// Each block claims the next tile of kTileItems elements, scans it locally, and gets the
// sum of everything before the tile from the tiles before it:
//   * as soon as it knows its tile's sum (the aggregate) it publishes it, flagged
//     kAggregate, so later tiles can use it before this tile knows its own prefix;
//   * one warp then pauses (kLookBackDelayNs) and looks back over the predecessors, 32
//     at a time, adding aggregates until it meets a tile flagged kPrefix (its inclusive
//     prefix is known), which ends the walk; it publishes this tile's inclusive prefix,
//     flagged kPrefix;
//   * every thread adds the prefix to its items and stores them.
// Inside a tile: each thread owns kItemsPerThread consecutive elements and reduces them
// serially in registers; the thread totals are scanned across the warp with shuffles and
// the warp totals combined through shared memory; after the look-back each thread scans
// its items serially, seeded with its prefix. The exclusive scan is the same pass, each
// item taking the running sum before it is added.
//
// Memory: global loads and stores are 16-byte vectors in striped order (one contiguous
// 512-byte stretch per warp instruction) whenever in and out are 16-byte aligned and the
// tile is full; the last, partial tile (and every tile of an unaligned call) uses scalar
// accesses. Each warp turns striped into blocked order through its own slice of shared
// memory (no block barrier).

constexpr int kThreads = 256;
constexpr int kItemsPerThread = 16;  // four 16-byte vectors per thread
constexpr int kVectorsPerThread = kItemsPerThread / 4;
constexpr int kWarpSize = 32;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kWarpItems = kWarpSize * kItemsPerThread;  // 512: the elements one warp owns
constexpr int kTileItems = kThreads * kItemsPerThread;   // 4096: the elements one block owns
constexpr unsigned kFullMask = 0xffffffffu;
// Two pauses, measured on an H200 at 2^28 floats (tools/sweep.py). Right after a block
// publishes its aggregate, its predecessors are usually still at work: polling at once
// only adds traffic on the status words every later block also polls, and the look-back
// rung ran at 0.84x CUB that way. Sleeping about one L2 round trip first brought it to
// 1.02x. The back-off between polls of a predecessor that has published nothing matters
// far less (128 ns and 688 ns were within noise of each other).
constexpr unsigned kLookBackDelayNs = 1140;  // between publishing the aggregate and the first poll
constexpr unsigned kPollDelayNs = 688;       // between polls while a predecessor has published nothing

static_assert(kItemsPerThread % 4 == 0, "items are loaded as whole 4-element vectors");

// Tile status: one 64-bit word per tile, the flag in the high half and the bits of the
// value in the low half. It is written with one 64-bit store and read with one 64-bit
// load, so a reader always sees a flag together with the value it was published with.
// That is why no __threadfence is needed between writing a value and raising its flag
// (with the two in separate words it would be), and why relaxed atomics are enough.
using StatusWord = unsigned long long;
constexpr unsigned kInvalid = 0;    // nothing published yet (what the memset leaves)
constexpr unsigned kAggregate = 1;  // value: the sum of this tile alone
constexpr unsigned kPrefix = 2;     // value: the sum of this tile and every tile before it

__device__ unsigned to_bits(float value) { return __float_as_uint(value); }
__device__ unsigned to_bits(int value) { return static_cast<unsigned>(value); }
__device__ void from_bits(unsigned bits, float& value) { value = __uint_as_float(bits); }
__device__ void from_bits(unsigned bits, int& value) { value = static_cast<int>(bits); }

template <typename T>
__device__ StatusWord make_status(unsigned flag, T value) {
    return (static_cast<StatusWord>(flag) << 32) | to_bits(value);
}
__device__ unsigned flag_of(StatusWord word) { return static_cast<unsigned>(word >> 32); }
template <typename T>
__device__ T value_of(StatusWord word) {
    T value;
    from_bits(static_cast<unsigned>(word), value);
    return value;
}

// Atomic, so a poll is never served a stale copy and never sees half a word.
using StatusRef = cuda::atomic_ref<StatusWord, cuda::thread_scope_device>;
__device__ void publish(StatusWord* tile_status, long long tile, StatusWord word) {
    StatusRef(tile_status[tile]).store(word, cuda::memory_order_relaxed);
}
__device__ StatusWord read_status(StatusWord* tile_status, long long tile) {
    return StatusRef(tile_status[tile]).load(cuda::memory_order_relaxed);
}

template <typename T>
struct Vector4;
template <>
struct Vector4<float> {
    using type = float4;
};
template <>
struct Vector4<int> {
    using type = int4;
};

// Slot of a warp's element e in its shared-memory slice: one padding word after every
// 32, so that the striped accesses (vector: e = 4 * (j * 32 + lane) + c; scalar:
// e = j * 32 + lane) and the blocked ones (e = lane * 16 + k) of a warp all fall in 32
// different banks.
__host__ __device__ constexpr int padded(int e) { return e + e / kWarpSize; }

// One warp's kWarpItems elements, from global memory in striped order into registers in
// blocked order (lane l gets elements l * kItemsPerThread + k). Past n, 0: it changes no sum.
template <typename T>
__device__ void load_blocked(const T* __restrict__ in, std::size_t n, std::size_t warp_begin, bool vector_io,
                             T* exchange, int lane, T (&items)[kItemsPerThread]) {
    if (vector_io) {
        using V = typename Vector4<T>::type;
        const V* source = reinterpret_cast<const V*>(in + warp_begin);
        V vectors[kVectorsPerThread];
#pragma unroll
        for (int j = 0; j < kVectorsPerThread; ++j) vectors[j] = source[j * kWarpSize + lane];
#pragma unroll
        for (int j = 0; j < kVectorsPerThread; ++j) {
            const int e = 4 * (j * kWarpSize + lane);
            exchange[padded(e + 0)] = vectors[j].x;
            exchange[padded(e + 1)] = vectors[j].y;
            exchange[padded(e + 2)] = vectors[j].z;
            exchange[padded(e + 3)] = vectors[j].w;
        }
    } else {
        T values[kItemsPerThread];
#pragma unroll
        for (int j = 0; j < kItemsPerThread; ++j) {
            const std::size_t i = warp_begin + j * kWarpSize + lane;
            values[j] = i < n ? in[i] : T(0);
        }
#pragma unroll
        for (int j = 0; j < kItemsPerThread; ++j) exchange[padded(j * kWarpSize + lane)] = values[j];
    }
    __syncwarp();
#pragma unroll
    for (int k = 0; k < kItemsPerThread; ++k) items[k] = exchange[padded(lane * kItemsPerThread + k)];
}

// The way back: registers in blocked order, through shared memory, to global memory in
// striped order. Each lane rewrites only the slots it read itself in load_blocked, so
// one __syncwarp (before the striped reads) is enough.
template <typename T>
__device__ void store_blocked(T* __restrict__ out, std::size_t n, std::size_t warp_begin, bool vector_io,
                              T* exchange, int lane, const T (&items)[kItemsPerThread]) {
#pragma unroll
    for (int k = 0; k < kItemsPerThread; ++k) exchange[padded(lane * kItemsPerThread + k)] = items[k];
    __syncwarp();
    if (vector_io) {
        using V = typename Vector4<T>::type;
        V* destination = reinterpret_cast<V*>(out + warp_begin);
#pragma unroll
        for (int j = 0; j < kVectorsPerThread; ++j) {
            const int e = 4 * (j * kWarpSize + lane);
            V vector;
            vector.x = exchange[padded(e + 0)];
            vector.y = exchange[padded(e + 1)];
            vector.z = exchange[padded(e + 2)];
            vector.w = exchange[padded(e + 3)];
            destination[j * kWarpSize + lane] = vector;
        }
    } else {
#pragma unroll
        for (int j = 0; j < kItemsPerThread; ++j) {
            const int e = j * kWarpSize + lane;
            if (warp_begin + e < n) out[warp_begin + e] = exchange[padded(e)];
        }
    }
}

// Hillis-Steele across the lanes of one warp. A shuffle reads every lane's old value
// before any lane writes its new one, so this needs neither a barrier nor a second buffer.
template <typename T>
__device__ T warp_inclusive_scan(T value, int lane) {
#pragma unroll
    for (int offset = 1; offset < kWarpSize; offset *= 2) {
        const T left = __shfl_up_sync(kFullMask, value, offset);
        if (lane >= offset) value = left + value;
    }
    return value;
}

// The decoupled look-back, run by one whole warp; returns the sum of every element
// before this tile. Lane l inspects tile window_end - 1 - l. The nearest predecessor
// flagged kPrefix ends the walk: the prefix is its value plus the aggregates of the tiles
// between it and us. Without one in the window, the window's aggregates are added and
// the window moves 32 tiles back.
template <typename T>
__device__ T look_back(StatusWord* tile_status, unsigned tile, T tile_aggregate, int lane) {
    if (tile == 0) {
        if (lane == 0) publish(tile_status, 0, make_status(kPrefix, tile_aggregate));
        return T(0);
    }
    if (lane == 0) publish(tile_status, tile, make_status(kAggregate, tile_aggregate));
    __nanosleep(kLookBackDelayNs);

    T prefix = T(0);
    for (long long window_end = tile;; window_end -= kWarpSize) {
        const long long predecessor = window_end - 1 - lane;
        StatusWord word;
        for (;;) {
            // Lanes before tile 0 stand in as a prefix of 0; they are never added, since
            // tile 0 always publishes a prefix and so ends the walk first.
            word = predecessor >= 0 ? read_status(tile_status, predecessor) : make_status(kPrefix, T(0));
            if (!__any_sync(kFullMask, flag_of(word) == kInvalid)) break;
            __nanosleep(kPollDelayNs);
        }
        const unsigned prefix_lanes = __ballot_sync(kFullMask, flag_of(word) == kPrefix);
        // Lanes beyond the nearest prefix are already inside it.
        const int last_lane = prefix_lanes != 0 ? __ffs(prefix_lanes) - 1 : kWarpSize - 1;
        T window_sum = lane <= last_lane ? value_of<T>(word) : T(0);
        // Butterfly: every lane ends with the same sum (a + b == b + a, also in floats).
#pragma unroll
        for (int offset = 1; offset < kWarpSize; offset *= 2)
            window_sum += __shfl_xor_sync(kFullMask, window_sum, offset);
        prefix = window_sum + prefix;
        if (prefix_lanes != 0) break;
    }
    if (lane == 0) publish(tile_status, tile, make_status(kPrefix, prefix + tile_aggregate));
    return prefix;
}

template <typename T, bool kExclusive>
__global__ __launch_bounds__(kThreads) void scan_single_pass(const T* __restrict__ in, T* __restrict__ out,
                                                             std::size_t n, bool aligned_io,
                                                             StatusWord* tile_status, unsigned* tile_counter) {
    __shared__ T exchange[kWarps][padded(kWarpItems)];
    __shared__ T warp_totals[kWarps];
    __shared__ T tile_prefix;
    __shared__ unsigned claimed_tile;
    const int lane = threadIdx.x % kWarpSize;
    const int warp = threadIdx.x / kWarpSize;

    // Tiles go out in the order blocks start running, not by blockIdx.x: every tile this
    // block waits for then belongs to a block that is already running, so the wait ends.
    // Numbering by blockIdx.x saves this atomic and measured about 2% faster, but it
    // relies on blocks starting in index order, which CUDA does not promise.
    if (threadIdx.x == 0) claimed_tile = atomicAdd(tile_counter, 1u);
    __syncthreads();
    const unsigned tile = claimed_tile;
    const std::size_t tile_begin = static_cast<std::size_t>(tile) * kTileItems;
    const std::size_t warp_begin = tile_begin + static_cast<std::size_t>(warp) * kWarpItems;
    const bool vector_io = aligned_io && n - tile_begin >= kTileItems;

    T items[kItemsPerThread];
    load_blocked(in, n, warp_begin, vector_io, exchange[warp], lane, items);

    // Local sums: thread total (serial), warp scan of the thread totals, block combine.
    T thread_total = items[0];
#pragma unroll
    for (int k = 1; k < kItemsPerThread; ++k) thread_total += items[k];
    const T warp_inclusive = warp_inclusive_scan(thread_total, lane);
    T lane_exclusive = __shfl_up_sync(kFullMask, warp_inclusive, 1);
    if (lane == 0) lane_exclusive = T(0);
    if (lane == kWarpSize - 1) warp_totals[warp] = warp_inclusive;
    __syncthreads();
    T warp_prefix = T(0);
    T tile_aggregate = T(0);
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
        if (w == warp) warp_prefix = tile_aggregate;
        tile_aggregate += warp_totals[w];
    }

    if (warp == 0) {
        const T prefix = look_back(tile_status, tile, tile_aggregate, lane);
        if (lane == 0) tile_prefix = prefix;
    }
    __syncthreads();

    // Each thread scans its items serially, seeded with the sum of everything before them.
    T running = tile_prefix + (warp_prefix + lane_exclusive);
#pragma unroll
    for (int k = 0; k < kItemsPerThread; ++k) {
        if constexpr (kExclusive) {
            const T item = items[k];
            items[k] = running;
            running += item;
        } else {
            running += items[k];
            items[k] = running;
        }
    }
    store_blocked(out, n, warp_begin, vector_io, exchange[warp], lane, items);
}

std::size_t tiles_for(std::size_t n) { return (n + kTileItems - 1) / kTileItems; }

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }
// END SOLUTION
// STARTER: // Start with the large-vector scheme of lecture 4 (TODOs 1-4). The course reference
// STARTER: // goes further: one pass over the data, with "decoupled look-back" between blocks
// STARTER: // (see the handout), but get this right first.
// STARTER:
// STARTER: // TODO 1 (block scan): each block scans its own segment of the vector.
// STARTER: // Copy the segment into shared memory, scan it there, copy it back to out:
// STARTER: //   * first try the Hillis Steele Horn scan, with its two bugs fixed: double
// STARTER: //     buffer XY (read one half, write the other) and keep __syncthreads() outside
// STARTER: //     the `if`, so that all threads execute ALL iterations;
// STARTER: //   * then the Blelloch scan (reduction phase, then distribution phase), with twice
// STARTER: //     as many elements as threads.
// STARTER: // Elements past n count as 0. For the exclusive scan, each element takes its left
// STARTER: // neighbour's result (0 for the first) -- do not shift the inclusive result in a
// STARTER: // second pass. If block_sums is not null, also write the segment's total (its
// STARTER: // inclusive sum) to block_sums[blockIdx.x]: the lecture's extract_sum, merged in.
// STARTER: template <typename T>
// STARTER: __global__ void block_scan(const T* in, T* out, std::size_t n, bool exclusive, T* block_sums) {
// STARTER:     // your code here
// STARTER: }
// STARTER:
// STARTER: // TODO 2 (add back): add scanned_block_sums[b - 1], the sum of every element before
// STARTER: // segment b, to every element of segment b, for b = 1, 2, ... (the lecture's block_add).
// STARTER: template <typename T>
// STARTER: __global__ void block_add(T* out, std::size_t n, const T* scanned_block_sums) {
// STARTER:     // your code here
// STARTER: }

template <typename T>
void scan(const T* in, T* out, std::size_t n, bool exclusive, void* workspace) {
    // BEGIN SOLUTION
    if (n == 0) return;
    const std::size_t tiles = tiles_for(n);
    // Workspace: one status word per tile, then the tile counter. Zero marks every tile
    // kInvalid and starts the counter at tile 0; on the default stream the memset ends
    // before the scan begins.
    auto* tile_status = static_cast<StatusWord*>(workspace);
    auto* tile_counter = reinterpret_cast<unsigned*>(tile_status + tiles);
    LABKIT_CHECK(cudaMemsetAsync(workspace, 0, scan_workspace_bytes(n)));
    const bool aligned_io = aligned16(in) && aligned16(out);
    const auto grid = static_cast<unsigned>(tiles);
    if (exclusive)
        scan_single_pass<T, true><<<grid, kThreads>>>(in, out, n, aligned_io, tile_status, tile_counter);
    else
        scan_single_pass<T, false><<<grid, kThreads>>>(in, out, n, aligned_io, tile_status, tile_counter);
    LABKIT_CHECK_LAUNCH();
    // END SOLUTION
    // STARTER: // TODO 3 (the whole scan), with blocks = the number of segments of n elements:
    // STARTER: //   1. block_scan<<<blocks, threads>>>(in, out, n, exclusive, block_sums);
    // STARTER: //   2. scan the block sums, inclusive and in place. When there are more block sums
    // STARTER: //      than one block can scan, that is the same problem again one level up:
    // STARTER: //      call scan() on them (for n above segment^2 this is the lecture's 3-level scan);
    // STARTER: //   3. block_add<<<blocks - 1, threads>>>(out, n, block_sums).
    // STARTER: // With one block, step 1 alone is the answer (pass block_sums = nullptr).
    // STARTER: // block_sums live in workspace, one level after another (TODO 4 sizes it).
    // STARTER: // Check every launch with LABKIT_CHECK_LAUNCH(). Do not allocate memory or
    // STARTER: // synchronise with the host in here.
    // STARTER: (void)in; (void)out; (void)n; (void)exclusive; (void)workspace;
}

}  // namespace

std::size_t scan_workspace_bytes(std::size_t n) {
    // BEGIN SOLUTION
    return (tiles_for(n) + 1) * sizeof(StatusWord);  // the status words and the tile counter
    // END SOLUTION
    // STARTER: // TODO 4: the bytes of workspace your scan needs for n elements: room for the
    // STARTER: // block sums of every level (n / segment, then that / segment, ... until one).
    // STARTER: (void)n;
    // STARTER: return 0;
}

void scan_inclusive(const float* in, float* out, std::size_t n, void* workspace) {
    scan(in, out, n, false, workspace);
}
void scan_exclusive(const float* in, float* out, std::size_t n, void* workspace) {
    scan(in, out, n, true, workspace);
}
void scan_inclusive_int(const int* in, int* out, std::size_t n, void* workspace) {
    scan(in, out, n, false, workspace);
}
void scan_exclusive_int(const int* in, int* out, std::size_t n, void* workspace) {
    scan(in, out, n, true, workspace);
}
