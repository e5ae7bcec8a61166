// transpose ladder, rung 6: a tile of 32x8 threads, several rows each. The tile stays
// 32 x 32 and padded (rung 5), but a block has 32 x 8 threads instead of 32 x 32, and each
// thread moves 4 elements, rows y, y + 8, y + 16 and y + 24 of the tile. The 4 loads are
// independent, so a thread issues all of them before the first one answers: four times
// the bytes in flight per thread, while the index arithmetic and the barrier are paid
// once per 4 elements. Blocks of 256 threads also wait less at their barrier than blocks
// of 1024, and 8 of them fit on an SM, so some blocks load while others store.
#include <cstddef>

#include "tiles.cuh"
#include "transpose.hpp"

namespace {

constexpr unsigned kTileDim = 32;
constexpr unsigned kBlockRows = 8;  // threads per block in y; each thread moves kTileDim / kBlockRows rows

__global__ void __launch_bounds__(kTileDim * kBlockRows)
    transpose_tile_32x8(const float* __restrict__ in, float* __restrict__ out, std::size_t rows, std::size_t cols,
                        std::size_t first_tile_row) {
    __shared__ float tile[kTileDim][kTileDim + 1];
    const unsigned x = threadIdx.x;
    const unsigned y = threadIdx.y;
    const std::size_t in_col = static_cast<std::size_t>(blockIdx.x) * kTileDim + x;
    const std::size_t in_row = (first_tile_row + blockIdx.y) * kTileDim + y;

#pragma unroll
    for (unsigned k = 0; k < kTileDim; k += kBlockRows)
        if (in_col < cols && in_row + k < rows) tile[y + k][x] = in[(in_row + k) * cols + in_col];
    __syncthreads();

    // The same threads, now over out: x runs along a row of out (a column of in), y down.
    const std::size_t out_col = (first_tile_row + blockIdx.y) * kTileDim + x;
    const std::size_t out_row = static_cast<std::size_t>(blockIdx.x) * kTileDim + y;
#pragma unroll
    for (unsigned k = 0; k < kTileDim; k += kBlockRows)
        if (out_col < rows && out_row + k < cols) out[(out_row + k) * rows + out_col] = tile[x][y + k];
}

}  // namespace

void transpose(const float* in, float* out, std::size_t rows, std::size_t cols) {
    tiles::launch_over_tiles(rows, cols, kTileDim, [&](dim3 blocks, std::size_t first_tile_row) {
        transpose_tile_32x8<<<blocks, dim3(kTileDim, kBlockRows)>>>(in, out, rows, cols, first_tile_row);
    });
}
