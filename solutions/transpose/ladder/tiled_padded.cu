// transpose ladder, rung 5: lecture 10's one thread per element, tiled and padded. Rung 4
// with one change: the tile is declared tile[K][K + 1]. Element (y, x) of the tile now
// lies at word x + 33 y, in bank (x + 33 y) mod 32 = (x + y) mod 32, so the column a warp
// reads, tile[x][y] for x = 0..31, falls in 32 different banks: one shared-memory access
// instead of 32 (100 % shared efficiency), while the row writes stay conflict-free. One
// unused float per row of the tile (4.125 KiB instead of 4 KiB) buys it.
//
// This is the lecture's last rung. It is still one element per thread: each thread has a
// single load in flight, and a block's 1024 threads all wait at the barrier before any
// of them writes.
#include <cstddef>

#include "tiles.cuh"
#include "transpose.hpp"

namespace {

constexpr unsigned K = 32;

__global__ void transpose_thread_per_element_tiled_padded(const float* in, float* out, std::size_t rows,
                                                          std::size_t cols, std::size_t first_tile_row) {
    const std::size_t in_corner_i = static_cast<std::size_t>(blockIdx.x) * K;  // first column of the tile in in
    const std::size_t in_corner_j = (first_tile_row + blockIdx.y) * K;         // first row of the tile in in
    const std::size_t out_corner_i = in_corner_j;                              // first column of the tile in out
    const std::size_t out_corner_j = in_corner_i;                              // first row of the tile in out
    const unsigned x = threadIdx.x;
    const unsigned y = threadIdx.y;

    __shared__ float tile[K][K + 1];  // the padding: one extra column, never used

    if (in_corner_i + x < cols && in_corner_j + y < rows) tile[y][x] = in[(in_corner_i + x) + (in_corner_j + y) * cols];
    __syncthreads();
    if (out_corner_i + x < rows && out_corner_j + y < cols)
        out[(out_corner_i + x) + (out_corner_j + y) * rows] = tile[x][y];
}

}  // namespace

void transpose(const float* in, float* out, std::size_t rows, std::size_t cols) {
    tiles::launch_over_tiles(rows, cols, K, [&](dim3 blocks, std::size_t first_tile_row) {
        transpose_thread_per_element_tiled_padded<<<blocks, dim3(K, K)>>>(in, out, rows, cols, first_tile_row);
    });
}
