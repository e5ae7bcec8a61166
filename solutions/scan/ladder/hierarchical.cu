// scan ladder, rung 3: the tuned three-kernel hierarchical scan.
//
// The large-vector scheme of lecture 4 (block scan, scan of the block sums, add back),
// with a block scan that does far less work per element than rungs 1 and 2:
//   * a block scans a tile of kTileItems = kThreads * kItemsPerThread elements, and each
//     thread first scans its own kItemsPerThread consecutive elements serially in
//     registers (no barrier, no shared memory traffic);
//   * the thread totals are scanned across each warp with shuffles (Hillis-Steele inside
//     a warp: 5 steps, no barrier, no double buffer);
//   * the kWarps warp totals are combined through shared memory (one barrier);
//   * every thread adds its prefix to its elements.
// Loads and stores go through shared memory in striped order (thread t touches t,
// t + kThreads, ...), so every warp access to global memory is one coalesced 128-byte
// line; the blocked order the serial scan needs is read back from shared memory.
//
// Kernels: (1) scan_tiles scans every tile and writes the tile totals; (2) the tile
// totals are scanned by the same kernel, recursively when there are more than one
// tile's worth (n above kTileItems^2 = 2^22); (3) the add-back kernel adds each tile's
// prefix. That driver is shared by all the rungs: see hierarchy.cuh. The vector is read
// and written twice (scan, then add back); rung 4 does it in one pass.
#include "hierarchy.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kItemsPerThread = 8;
constexpr int kTileItems = kThreads * kItemsPerThread;  // 2048
constexpr int kWarpSize = 32;
constexpr int kWarps = kThreads / kWarpSize;
constexpr unsigned kFullMask = 0xffffffffu;

// Shared-memory slot of tile element e: one padding word after every 32, so that both
// the striped accesses (e = k * kThreads + t) and the blocked ones
// (e = t * kItemsPerThread + k) of a warp fall in 32 different banks.
__host__ __device__ constexpr int padded(int e) { return e + e / kWarpSize; }

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

// in may equal out (the tile sums are scanned in place): a block reads its whole tile
// into shared memory before it writes any of it, and blocks touch disjoint tiles.
template <typename T>
__global__ __launch_bounds__(kThreads) void scan_tiles(const T* in, T* out, std::size_t n, bool exclusive,
                                                       T* tile_sums) {
    __shared__ T tile[padded(kTileItems)];
    __shared__ T warp_totals[kWarps];
    const int lane = threadIdx.x % kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
    const std::size_t tile_begin = static_cast<std::size_t>(blockIdx.x) * kTileItems;
    const std::size_t left = n - tile_begin;
    const int count = left < kTileItems ? static_cast<int>(left) : kTileItems;

    // Striped, coalesced load; past the end, 0 (it changes no sum).
#pragma unroll
    for (int k = 0; k < kItemsPerThread; ++k) {
        const int e = k * kThreads + threadIdx.x;
        tile[padded(e)] = e < count ? in[tile_begin + e] : T(0);
    }
    __syncthreads();

    // Each thread scans its own consecutive elements in registers.
    T items[kItemsPerThread];
#pragma unroll
    for (int k = 0; k < kItemsPerThread; ++k) items[k] = tile[padded(threadIdx.x * kItemsPerThread + k)];
#pragma unroll
    for (int k = 1; k < kItemsPerThread; ++k) items[k] = items[k - 1] + items[k];
    const T thread_total = items[kItemsPerThread - 1];

    // Scan the thread totals across the warp; the exclusive value is the left lane's.
    const T warp_inclusive = warp_inclusive_scan(thread_total, lane);
    T lane_exclusive = __shfl_up_sync(kFullMask, warp_inclusive, 1);
    if (lane == 0) lane_exclusive = T(0);
    if (lane == kWarpSize - 1) warp_totals[warp] = warp_inclusive;
    __syncthreads();

    // Combine the few warp totals: every thread walks them (they are broadcast reads).
    T warp_prefix = T(0);
    T tile_total = T(0);
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
        if (w == warp) warp_prefix = tile_total;
        tile_total += warp_totals[w];
    }
    const T thread_prefix = warp_prefix + lane_exclusive;

    // Exclusive: element k takes the running sum before it (k - 1), so both scans come
    // out of the one pass.
#pragma unroll
    for (int k = 0; k < kItemsPerThread; ++k) {
        const T local = exclusive ? (k == 0 ? T(0) : items[k - 1]) : items[k];
        tile[padded(threadIdx.x * kItemsPerThread + k)] = thread_prefix + local;
    }
    if (tile_sums != nullptr && threadIdx.x == 0) tile_sums[blockIdx.x] = tile_total;
    __syncthreads();

#pragma unroll
    for (int k = 0; k < kItemsPerThread; ++k) {
        const int e = k * kThreads + threadIdx.x;
        if (e < count) out[tile_begin + e] = tile[padded(e)];
    }
}

}  // namespace

// The multi-level scan of hierarchy.cuh around this rung's block scan.
SCAN_HIERARCHY_DEFINE_API(scan_hierarchy::KernelBlockScan<kTileItems, kThreads, scan_tiles<float>, scan_tiles<int>>);
