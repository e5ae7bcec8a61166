// scan ladder, rung 1: the Hillis-Steele-Horn block scan (lecture 4), made into a full
// scan of any length.
//
// Each block scans kBlockSize elements, one per thread, with the lecture's corrected
// code: XY is double buffered (each step reads one half and writes the other, so no
// thread overwrites a value that another thread has still to read in the same step),
// and every thread runs every iteration with the barrier outside the `if` (a barrier
// that only some threads reach is undefined behaviour, and can deadlock).
//
// A vector longer than one block uses the lecture's large-vector scheme, recursively
// (block scan writing the block sums, scan of the block sums, add back), which all the
// rungs share: see hierarchy.cuh. For n above kBlockSize^2 = 2^20 that is the lecture's
// 3-level scan; longer vectors just recurse once more.
//
// About n log2(kBlockSize) additions, and the vector is read and written twice (block
// scan, then add back): the slow rung.
#include "hierarchy.cuh"

namespace {

constexpr int kBlockSize = 1024;  // threads per block = elements per block segment

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

}  // namespace

// The multi-level scan of hierarchy.cuh around this rung's block scan.
SCAN_HIERARCHY_DEFINE_API(scan_hierarchy::KernelBlockScan<kBlockSize, kBlockSize, hsh_block_scan<float>, hsh_block_scan<int>>);
