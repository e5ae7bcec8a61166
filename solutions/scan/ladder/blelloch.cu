// scan ladder, rung 2: the Blelloch work-efficient block scan (lecture 4), made into a
// full scan of any length.
//
// Each block of kThreads threads scans a section of kSection = 2 * kThreads elements
// ("better to deal with a number of vector elements equal to twice the block size and
// use all the threads"), in place in shared memory:
//   * reduction phase: a tree of partial sums up to the section total;
//   * distribution phase: the partial sums are pushed back down to every element.
// Both use the lecture's index form, index = (threadIdx.x + 1) * stride * 2 - 1, so the
// working threads are contiguous from thread 0 (little divergence), and no thread writes
// a location another thread reads in the same step, so one buffer is enough.
// About 2 kSection additions per section instead of Hillis-Steele's kSection log2 kSection.
//
// Three things make it fast enough to beat Hillis-Steele, as a work-efficient scan should:
//   * coalesced global memory: thread t loads and stores elements t and t + kThreads of its
//     section (not 2t and 2t + 1), so a warp touches 32 consecutive words each time;
//   * no shared-memory bank conflicts: shared memory has 32 banks of 4-byte words, and word
//     i lives in bank i % 32. In the tree phases a warp's 32 threads access indices
//     2 * stride apart, so for stride >= 16 they all land in the same bank (32-way
//     conflict: the accesses are serialised). Padding every index with one extra word per
//     32, padded(i) = i + CONFLICT_FREE_OFFSET(i), CONFLICT_FREE_OFFSET(i) = i >> 5, shifts
//     each 32-word row of the section one bank further, so indices a multiple of 32 apart
//     fall in different banks again (the classic GPU Gems 3, ch. 39, padding);
//   * few barriers: at stride >= kWarpStride (32) the lecture's index form leaves at most
//     32 working threads, and they are threads 0..31, one warp. Those levels (the top of
//     the tree: the last 6 of the reduction phase and the first 5 of the distribution
//     phase) run in warp 0 alone, with __syncwarp between steps (all 32 lanes reach it,
//     working or not; it orders their shared-memory accesses) instead of __syncthreads, so
//     the other 31 warps just wait at one barrier. 12 block barriers instead of 22.
//
// Longer vectors: the lecture's large-vector scheme, recursively (block scan writing the
// section totals, scan of the section totals, add back), shared by all the rungs: see
// hierarchy.cuh. For n above kSection^2 = 2^22 that is the lecture's 3-level scan.
#include "hierarchy.cuh"

namespace {

constexpr int kThreads = 1024;
constexpr int kSection = 2 * kThreads;  // elements one block scans

constexpr unsigned kWarpSize = 32;
constexpr unsigned kLogNumBanks = 5;  // 32 banks of 4-byte words
// The smallest stride at which at most one warp works: kSection / (2 stride) threads.
constexpr unsigned kWarpStride = kSection / (2 * kWarpSize);
static_assert(kSection / (2 * kWarpStride) == kWarpSize, "the warp phase must cover exactly warp 0");

// One padding word per 32 (see the comment at the top): word i of the section is stored at
// i + CONFLICT_FREE_OFFSET(i).
__host__ __device__ constexpr unsigned conflict_free_offset(unsigned i) { return i >> kLogNumBanks; }
__host__ __device__ constexpr unsigned padded_index(unsigned i) { return i + conflict_free_offset(i); }
constexpr unsigned kPaddedSection = padded_index(kSection - 1) + 1;

template <typename T>
__global__ void __launch_bounds__(kThreads) blelloch_block_scan(const T* in, T* out, std::size_t n, bool exclusive,
                                                                T* section_sums) {
    __shared__ T XY[kPaddedSection];
    const unsigned t = threadIdx.x;
    const std::size_t section_begin = static_cast<std::size_t>(blockIdx.x) * kSection;

    // Each thread copies two elements kThreads apart, so a warp reads consecutive words.
    // Past the end, 0: it changes no sum.
    for (unsigned k = t; k < kSection; k += kThreads)
        XY[padded_index(k)] = section_begin + k < n ? in[section_begin + k] : T(0);

    // Reduction phase, lower levels: many warps work, so a block barrier before each step.
    for (unsigned stride = 1; stride < kWarpStride; stride *= 2) {
        __syncthreads();
        const unsigned index = (t + 1) * stride * 2 - 1;
        if (index < kSection) XY[padded_index(index)] += XY[padded_index(index - stride)];
    }
    __syncthreads();

    // The top of the tree, both phases: only warp 0 works (the condition is the same for a
    // whole warp). Every lane of warp 0 runs every step and reaches every __syncwarp.
    if (t < kWarpSize) {
        for (unsigned stride = kWarpStride; stride < kSection; stride *= 2) {
            const unsigned index = (t + 1) * stride * 2 - 1;
            if (index < kSection) XY[padded_index(index)] += XY[padded_index(index - stride)];
            __syncwarp();
        }
        for (unsigned stride = kSection / 4; stride >= kWarpStride; stride /= 2) {
            const unsigned index = (t + 1) * stride * 2 - 1;
            if (index + stride < kSection) XY[padded_index(index + stride)] += XY[padded_index(index)];
            __syncwarp();
        }
    }

    // Distribution phase, lower levels: a block barrier before each step again.
    for (unsigned stride = kWarpStride / 2; stride > 0; stride /= 2) {
        __syncthreads();
        const unsigned index = (t + 1) * stride * 2 - 1;
        if (index + stride < kSection) XY[padded_index(index + stride)] += XY[padded_index(index)];
    }
    __syncthreads();

    // Exclusive: the same scan, each element taking its left neighbour's inclusive sum.
    for (unsigned k = t; k < kSection; k += kThreads) {
        if (section_begin + k >= n) break;
        out[section_begin + k] = exclusive ? (k == 0 ? T(0) : XY[padded_index(k - 1)]) : XY[padded_index(k)];
    }
    if (section_sums != nullptr && t == 0) section_sums[blockIdx.x] = XY[padded_index(kSection - 1)];
}

}  // namespace

// The multi-level scan of hierarchy.cuh around this rung's block scan.
SCAN_HIERARCHY_DEFINE_API(scan_hierarchy::KernelBlockScan<kSection, kThreads, blelloch_block_scan<float>, blelloch_block_scan<int>>);
