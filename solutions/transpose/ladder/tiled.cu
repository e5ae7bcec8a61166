// transpose ladder, rung 4: lecture 10's one thread per element, tiled. Each 32 x 32 block
// first copies its K x K tile of in into shared memory, row by row as it lies in memory
// (tile[y][x] = in[...]: a warp reads 128 contiguous bytes), waits for the whole tile,
// and then writes the tile's transpose to out, again row by row (out[...] = tile[x][y]: a
// warp writes 128 contiguous bytes). Both global accesses are now coalesced; the strided
// access moved into shared memory. There it costs: the 32 threads of a warp read
// tile[x][y] for x = 0..31, addresses 32 words apart, all in the same bank, so the read
// is replayed 32 times (the lecture's 6.1 % shared efficiency). Rung 5 fixes that.
//
// Threads outside the matrix (the ragged last tiles) skip their load and store but still
// reach __syncthreads(): every thread of a block must.
#include <cstddef>

#include "tiles.cuh"
#include "transpose.hpp"

namespace {

constexpr unsigned K = 32;

__global__ void transpose_thread_per_element_tiled(const float* in, float* out, std::size_t rows, std::size_t cols,
                                                   std::size_t first_tile_row) {
    const std::size_t in_corner_i = static_cast<std::size_t>(blockIdx.x) * K;  // first column of the tile in in
    const std::size_t in_corner_j = (first_tile_row + blockIdx.y) * K;         // first row of the tile in in
    const std::size_t out_corner_i = in_corner_j;                              // first column of the tile in out
    const std::size_t out_corner_j = in_corner_i;                              // first row of the tile in out
    const unsigned x = threadIdx.x;
    const unsigned y = threadIdx.y;

    __shared__ float tile[K][K];

    if (in_corner_i + x < cols && in_corner_j + y < rows) tile[y][x] = in[(in_corner_i + x) + (in_corner_j + y) * cols];
    __syncthreads();
    if (out_corner_i + x < rows && out_corner_j + y < cols)
        out[(out_corner_i + x) + (out_corner_j + y) * rows] = tile[x][y];
}

}  // namespace

void transpose(const float* in, float* out, std::size_t rows, std::size_t cols) {
    tiles::launch_over_tiles(rows, cols, K, [&](dim3 blocks, std::size_t first_tile_row) {
        transpose_thread_per_element_tiled<<<blocks, dim3(K, K)>>>(in, out, rows, cols, first_tile_row);
    });
}
