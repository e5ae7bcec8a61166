// scan ladder, rung 1: the Hillis-Steele-Horn block scan (lecture 4), made into a full
// scan of any length.
//
// Each block scans kBlockSize elements, one per thread, with the lecture's corrected
// code: XY is double buffered (each step reads one half and writes the other, so no
// thread overwrites a value that another thread has still to read in the same step),
// and every thread runs every iteration with the barrier outside the `if` (a barrier
// that only some threads reach is undefined behaviour, and can deadlock).
//
// A vector longer than one block uses the lecture's large-vector scheme, recursively:
//   1. block scan: every block scans its own segment and writes its total to block_sums;
//   2. scan the block sums (the same code on a vector kBlockSize times shorter, which is
//      itself split into blocks when it is longer than one block);
//   3. add back: every element of block b gets the scanned sum of blocks 0..b-1.
// For n above kBlockSize^2 = 2^20 that is the lecture's 3-level scan; longer vectors
// just recurse once more.
//
// About n log2(kBlockSize) additions, and the vector is read and written twice (block
// scan, then add back): the slow rung.
#include "labkit/check.hpp"
#include "scan.hpp"

namespace {

constexpr int kBlockSize = 1024;  // threads per block = elements per block segment

// The workspace holds block sums as 4-byte elements, whichever scan is asked for.
static_assert(sizeof(float) == sizeof(int), "one workspace layout serves both element types");

template <typename T>
__global__ void hsh_block_scan(const T* in, T* out, std::size_t n, bool exclusive, T* block_sums) {
    __shared__ T XY[2 * kBlockSize];  // two buffers: read one, write the other
    int read_buf = 0;
    int write_buf = kBlockSize;
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kBlockSize + threadIdx.x;
    // Past the end, 0: it leaves every sum, the block total included, unchanged.
    XY[write_buf + threadIdx.x] = i < n ? in[i] : T(0);

    for (unsigned stride = 1; stride < kBlockSize; stride *= 2) {
        __syncthreads();  // reached by every thread in every iteration
        write_buf = kBlockSize - write_buf;
        read_buf = kBlockSize - read_buf;
        if (threadIdx.x >= stride)
            XY[write_buf + threadIdx.x] = XY[read_buf + threadIdx.x - stride] + XY[read_buf + threadIdx.x];
        else  // not adding: copy, so the new buffer is complete
            XY[write_buf + threadIdx.x] = XY[read_buf + threadIdx.x];
    }
    __syncthreads();  // the exclusive scan reads its neighbour's result

    const T inclusive = XY[write_buf + threadIdx.x];
    if (i < n) {
        // Exclusive: the same scan, each thread writing its left neighbour's inclusive sum.
        const T before = threadIdx.x == 0 ? T(0) : XY[write_buf + threadIdx.x - 1];
        out[i] = exclusive ? before : inclusive;
    }
    if (block_sums != nullptr && threadIdx.x == kBlockSize - 1) block_sums[blockIdx.x] = inclusive;
}

// Block b + 1 adds the sum of blocks 0..b (block 0 needs nothing, so it gets no block).
template <typename T>
__global__ void add_block_prefixes(T* out, std::size_t n, const T* scanned_block_sums) {
    const std::size_t block = static_cast<std::size_t>(blockIdx.x) + 1;
    const std::size_t i = block * kBlockSize + threadIdx.x;
    if (i < n) out[i] += scanned_block_sums[block - 1];
}

std::size_t blocks_for(std::size_t n) { return (n + kBlockSize - 1) / kBlockSize; }

// Each level's block sums start on a 256-byte boundary.
std::size_t padded(std::size_t count) { return (count + 63) / 64 * 64; }

// One level of the hierarchy. in may equal out (the block sums are scanned in place):
// every thread reads its own element before any thread of its block writes, and blocks
// touch disjoint segments.
template <typename T>
void scan_level(const T* in, T* out, std::size_t n, bool exclusive, T* workspace) {
    const std::size_t blocks = blocks_for(n);
    T* block_sums = blocks > 1 ? workspace : nullptr;
    hsh_block_scan<T><<<static_cast<unsigned>(blocks), kBlockSize>>>(in, out, n, exclusive, block_sums);
    LABKIT_CHECK_LAUNCH();
    if (blocks == 1) return;
    // The levels above are inclusive: block b needs the sum of blocks 0..b-1, which is
    // the inclusive scan of the block sums at b-1.
    scan_level<T>(block_sums, block_sums, blocks, false, workspace + padded(blocks));
    add_block_prefixes<T><<<static_cast<unsigned>(blocks - 1), kBlockSize>>>(out, n, block_sums);
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
    for (std::size_t count = blocks_for(n); count > 1; count = blocks_for(count)) elements += padded(count);
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
