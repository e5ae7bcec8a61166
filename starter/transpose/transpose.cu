// Lab transpose: out = in^T, for a rows x cols matrix of floats.
//
// What you practise here (lecture 10): how the threads of a warp meet global memory.
// A warp's 32 loads (or stores) are served together: when they fall in the same 128
// contiguous bytes, that is one transaction (coalesced); when each falls in a different
// row of a matrix, that is 32 transactions of which each carries 4 useful bytes out of 32.
// A transpose reads along the rows of in and writes along the columns of out, or the
// other way round, so one of the two is strided whatever the threads do, unless a block
// first reads a tile of in into shared memory, along its rows, and then writes the tile
// back to out, along out's rows. Shared memory has its own rule: its 32 banks serve one
// word each per access, so the column of a tile that a warp reads must not fall in one
// bank (pad the tile by one column, and it does not).
//
// Shapes. in is rows x cols, row-major: element (r, c) is in[r * cols + c]. out is
// cols x rows: element (c, r) is out[c * rows + r], and it must equal in's (r, c). rows
// and cols can be anything from 1 up, so tiles at the right and bottom edges are partly
// outside the matrix: check both bounds, for the load and for the store. The checker
// names the first wrong element by its place in out: out[y=c, x=r] should be in[r][c].
//
// Build and run:   cudalab run transpose .          (checks every test case)
//                  cudalab run transpose . --bench  (times it against the copy roof and cuBLAS)
#include <cstddef>

#include "labkit/check.hpp"
#include "transpose.hpp"

// The side of the square tile, as in lecture 10: a block of K x K threads moves
// one K x K tile, one element per thread.
constexpr unsigned K = 32;

// TODO 1: write lecture 10's tiled and padded transpose, for any rows and cols.
// Block (blockIdx.x, blockIdx.y) owns the tile of in whose first column is
// blockIdx.x * K and whose first row is blockIdx.y * K; thread (x, y) =
// (threadIdx.x, threadIdx.y) is one element of it.
//   * Load: tile[y][x] = in's element (row blockIdx.y * K + y, column
//     blockIdx.x * K + x), so a warp (32 threads with the same y) reads 32
//     neighbours in one row of in: coalesced. Skip threads outside the matrix.
//   * __syncthreads(): the whole tile must be in shared memory before anyone reads
//     from it. Every thread of the block must reach it, those outside too.
//   * Store: out's element (row blockIdx.x * K + y, column blockIdx.y * K + x) is
//     tile[x][y], so a warp writes 32 neighbours in one row of out (out is
//     cols x rows: its element (c, r) is out[c * rows + r]). Skip threads outside.
//   * Pad the tile by one column (float tile[K][K + 1]): tile[x][y] for x = 0..31
//     then lies in 32 different shared-memory banks instead of one.
// Use std::size_t for indices: rows * cols need not fit in an int.
__global__ void transpose_tiled_padded(const float* in, float* out, std::size_t rows, std::size_t cols) {
    // your code here, starting with the block's tile:
    //     __shared__ float tile[K][K + 1];
}

void transpose(const float* in, float* out, std::size_t rows, std::size_t cols) {
    // TODO 2: launch transpose_tiled_padded with blocks of K x K threads, dim3(K, K),
    // and a 2-D grid with one block per tile: ceil(cols / K) blocks in x (across the
    // columns of in) and ceil(rows / K) in y (down its rows). Check the launch with
    // LABKIT_CHECK_LAUNCH(). Do not synchronise with the host or allocate memory here.
    // Once it passes every case, make it faster: blocks of 32 x 8 threads in which each
    // thread moves 4 rows of the tile (4 independent loads in flight instead of 1),
    // then larger tiles (64 x 64) with more elements per thread.
    (void)in; (void)out; (void)rows; (void)cols; (void)K;
}
