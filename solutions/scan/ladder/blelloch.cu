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
// Longer vectors: the lecture's large-vector scheme, recursively (block scan writing the
// section totals, scan of the section totals, add back). For n above kSection^2 = 2^22
// that is the lecture's 3-level scan.
#include "labkit/check.hpp"
#include "scan.hpp"

namespace {

constexpr int kThreads = 1024;
constexpr int kSection = 2 * kThreads;  // elements one block scans

static_assert(sizeof(float) == sizeof(int), "one workspace layout serves both element types");

template <typename T>
__global__ void blelloch_block_scan(const T* in, T* out, std::size_t n, bool exclusive, T* section_sums) {
    __shared__ T XY[kSection];
    const std::size_t section_begin = static_cast<std::size_t>(blockIdx.x) * kSection;

    // Each thread copies two elements kThreads apart, so a warp reads consecutive words.
    // Past the end, 0: it changes no sum.
    for (unsigned k = threadIdx.x; k < kSection; k += kThreads)
        XY[k] = section_begin + k < n ? in[section_begin + k] : T(0);

    // Reduction phase.
    for (unsigned stride = 1; stride < kSection; stride *= 2) {
        __syncthreads();
        const unsigned index = (threadIdx.x + 1) * stride * 2 - 1;
        if (index < kSection) XY[index] += XY[index - stride];
    }

    // Distribution phase.
    for (unsigned stride = kSection / 4; stride > 0; stride /= 2) {
        __syncthreads();
        const unsigned index = (threadIdx.x + 1) * stride * 2 - 1;
        if (index + stride < kSection) XY[index + stride] += XY[index];
    }
    __syncthreads();

    // Exclusive: the same scan, each element taking its left neighbour's inclusive sum.
    for (unsigned k = threadIdx.x; k < kSection; k += kThreads) {
        if (section_begin + k >= n) break;
        out[section_begin + k] = exclusive ? (k == 0 ? T(0) : XY[k - 1]) : XY[k];
    }
    if (section_sums != nullptr && threadIdx.x == 0) section_sums[blockIdx.x] = XY[kSection - 1];
}

// Section s + 1 adds the sum of sections 0..s (section 0 needs nothing).
template <typename T>
__global__ void add_section_prefixes(T* out, std::size_t n, const T* scanned_section_sums) {
    const std::size_t section = static_cast<std::size_t>(blockIdx.x) + 1;
    const T prefix = scanned_section_sums[section - 1];
    for (unsigned k = threadIdx.x; k < kSection; k += kThreads) {
        const std::size_t i = section * kSection + k;
        if (i < n) out[i] += prefix;
    }
}

std::size_t sections_for(std::size_t n) { return (n + kSection - 1) / kSection; }

// Each level's section sums start on a 256-byte boundary.
std::size_t padded(std::size_t count) { return (count + 63) / 64 * 64; }

// One level of the hierarchy. in may equal out (the section sums are scanned in place):
// a block reads its whole section into shared memory before it writes any of it, and
// blocks touch disjoint sections.
template <typename T>
void scan_level(const T* in, T* out, std::size_t n, bool exclusive, T* workspace) {
    const std::size_t sections = sections_for(n);
    T* section_sums = sections > 1 ? workspace : nullptr;
    blelloch_block_scan<T><<<static_cast<unsigned>(sections), kThreads>>>(in, out, n, exclusive, section_sums);
    LABKIT_CHECK_LAUNCH();
    if (sections == 1) return;
    // Inclusive above the first level: section s needs the sum of sections 0..s-1.
    scan_level<T>(section_sums, section_sums, sections, false, workspace + padded(sections));
    add_section_prefixes<T><<<static_cast<unsigned>(sections - 1), kThreads>>>(out, n, section_sums);
    LABKIT_CHECK_LAUNCH();
}

template <typename T>
void scan(const T* in, T* out, std::size_t n, bool exclusive, void* workspace) {
    if (n == 0) return;
    scan_level<T>(in, out, n, exclusive, static_cast<T*>(workspace));
}

}  // namespace

std::size_t scan_workspace_bytes(std::size_t n) {
    std::size_t elements = 0;
    for (std::size_t count = sections_for(n); count > 1; count = sections_for(count)) elements += padded(count);
    return elements * sizeof(float);
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
