// transpose ladder, rung 3: lecture 10's one thread per element, K = 32. A 2-D grid of
// 32 x 32 blocks; thread (x, y) of block (bx, by) moves element (row j = 32 by + y,
// column i = 32 bx + x). Plenty of parallelism now, but the access pattern is rung 2's:
// a warp (32 threads with the same y) reads 128 contiguous bytes of a row of in and
// writes one element into each of 32 rows of out, so every store moves a 32-byte sector
// for 4 useful bytes. The lecture's copy kernels show the gap: the same grid copying
// in[i + j N] to out[i + j N] (coalesced both ways) takes less than half the time.
#include <cstddef>

#include "tiles.cuh"
#include "transpose.hpp"

namespace {

constexpr unsigned K = 32;

__global__ void transpose_thread_per_element(const float* in, float* out, std::size_t rows, std::size_t cols,
                                             std::size_t first_tile_row) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * K + threadIdx.x;  // a column of in
    const std::size_t j = (first_tile_row + blockIdx.y) * K + threadIdx.y;         // a row of in
    if (i < cols && j < rows) out[j + i * rows] = in[i + j * cols];
}

}  // namespace

void transpose(const float* in, float* out, std::size_t rows, std::size_t cols) {
    tiles::launch_over_tiles(rows, cols, K, [&](dim3 blocks, std::size_t first_tile_row) {
        transpose_thread_per_element<<<blocks, dim3(K, K)>>>(in, out, rows, cols, first_tile_row);
    });
}
