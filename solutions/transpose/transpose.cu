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

// BEGIN SOLUTION
// Each block moves one kTileDim x kTileDim tile of in to its transposed place in out,
// through shared memory, with 32 x kBlockRows threads: each thread moves kColsPerThread
// columns x kRowsPerThread rows of the tile (2 x 4 = 8 elements with the values below)
// and issues all of its loads before it needs any of them, so that many bytes are in
// flight per thread while the memory answers. Tiles that lie wholly inside the matrix
// (all but the last row and column of tiles) take a path without bounds checks.
//
// Variants of (kTileDim, kBlockRows) worth timing on a new GPU (tools/sweep.py): (64, 16),
// 8 elements per thread, the fastest on an H100 (1.003x cublasSgeam at 16384^2, against
// 0.994x for (64, 8) with 16 per thread and 0.966x for (32, 8) with 4); kTileDim must be
// a multiple of 32 and of kBlockRows.
namespace {

constexpr unsigned kTileDim = 64;
constexpr unsigned kBlockRows = 16;

constexpr unsigned kWarpSize = 32;
constexpr unsigned kColsPerThread = kTileDim / kWarpSize;
constexpr unsigned kRowsPerThread = kTileDim / kBlockRows;
static_assert(kTileDim % kWarpSize == 0 && kTileDim % kBlockRows == 0,
              "a tile is a whole number of warps wide and of block heights tall");
static_assert(kWarpSize * kBlockRows <= 1024, "a block has at most 1024 threads");

// The most blocks a grid may have in y; wider matrices loop over columns of tiles.
constexpr std::size_t kMaxGridY = 65535;

// The tile in shared memory, padded by one column. Element (y, x) of the tile is word
// x + (kTileDim + 1) y, in bank (x + y) mod 32 because kTileDim + 1 leaves 1 over a
// multiple of 32. Writing a row of the tile (x = lane) and reading a column of it
// (y = lane) then both touch 32 different banks: no bank conflicts. Unpadded, the column
// would lie in one bank and every read of it would be replayed 32 times.
using Tile = float[kTileDim][kTileDim + 1];

// Moves the tile whose first element is in's (row0, col0), which lies wholly inside the
// matrix (every tile but those of the last row and column of tiles). Lane x of a warp
// handles columns x, x + 32, ... of the tile, so each warp-wide load reads 32 neighbours
// in one row of in (128 contiguous bytes) and each warp-wide store writes 32 neighbours
// in one row of out.
__device__ __forceinline__ void move_inner_tile(const float* __restrict__ in, float* __restrict__ out,
                                                std::size_t rows, std::size_t cols, std::size_t row0,
                                                std::size_t col0, Tile& tile) {
    const unsigned x = threadIdx.x;
    const unsigned y = threadIdx.y;

    // Load: rows row0 + y, row0 + y + kBlockRows, ... of in. All loads first, into
    // registers: they are independent, so they are all in flight at once.
    float v[kRowsPerThread][kColsPerThread];
    const float* src = in + (row0 + y) * cols + col0 + x;
    const std::size_t src_step = static_cast<std::size_t>(kBlockRows) * cols;
#pragma unroll
    for (unsigned r = 0; r < kRowsPerThread; ++r) {
#pragma unroll
        for (unsigned c = 0; c < kColsPerThread; ++c) v[r][c] = src[c * kWarpSize];
        src += src_step;
    }
#pragma unroll
    for (unsigned r = 0; r < kRowsPerThread; ++r)
#pragma unroll
        for (unsigned c = 0; c < kColsPerThread; ++c) tile[y + r * kBlockRows][x + c * kWarpSize] = v[r][c];
    __syncthreads();  // the whole tile is in shared memory before anyone reads a column of it

    // Store: out's rows col0 + y, col0 + y + kBlockRows, ... (columns of in); lane x
    // writes out's column row0 + x + 32 c, which is column y + r kBlockRows of the tile's
    // row x + 32 c: a column of the tile, conflict-free thanks to the padding.
    float* dst = out + (col0 + y) * rows + row0 + x;
    const std::size_t dst_step = static_cast<std::size_t>(kBlockRows) * rows;
#pragma unroll
    for (unsigned r = 0; r < kRowsPerThread; ++r) {
#pragma unroll
        for (unsigned c = 0; c < kColsPerThread; ++c) dst[c * kWarpSize] = tile[x + c * kWarpSize][y + r * kBlockRows];
        dst += dst_step;
    }
}

// The same for a tile that sticks out of the matrix at the right or the bottom: only its
// first tile_rows rows and tile_cols columns are inside, and the loops stop there. These
// tiles are few (none at all when 64 divides rows and cols), so this path is written for
// correctness and few registers, not speed: unrolled like the one above, it would raise
// the registers of the whole kernel and so lower the blocks that fit on an SM.
__device__ __forceinline__ void move_edge_tile(const float* __restrict__ in, float* __restrict__ out,
                                               std::size_t rows, std::size_t cols, std::size_t row0,
                                               std::size_t col0, Tile& tile) {
    const unsigned tile_rows = static_cast<unsigned>(rows - row0 < kTileDim ? rows - row0 : kTileDim);
    const unsigned tile_cols = static_cast<unsigned>(cols - col0 < kTileDim ? cols - col0 : kTileDim);
    const float* corner_in = in + row0 * cols + col0;
    float* corner_out = out + col0 * rows + row0;
#pragma unroll 1
    for (unsigned ty = threadIdx.y; ty < tile_rows; ty += kBlockRows)
        for (unsigned tx = threadIdx.x; tx < tile_cols; tx += kWarpSize) tile[ty][tx] = corner_in[ty * cols + tx];
    __syncthreads();  // every thread reaches it, those with nothing to load too
#pragma unroll 1
    for (unsigned ty = threadIdx.y; ty < tile_cols; ty += kBlockRows)
        for (unsigned tx = threadIdx.x; tx < tile_rows; tx += kWarpSize) corner_out[ty * rows + tx] = tile[tx][ty];
}

// blockIdx.x picks the row of tiles; blockIdx.y the column of tiles, looping when there
// are more columns of tiles than a grid can be tall. Neighbouring blocks (consecutive
// blockIdx.x, which run together) write neighbouring stretches of the same rows of out
// (and read the same columns of in): on an H100 this order is 0.7% faster than the other,
// whose neighbours read neighbouring stretches of in's rows, enough to pass cublasSgeam.
__global__ void __launch_bounds__(kWarpSize * kBlockRows)
    transpose_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t rows, std::size_t cols,
                     std::size_t tiles_across) {
    __shared__ Tile tile;
    const std::size_t row0 = static_cast<std::size_t>(blockIdx.x) * kTileDim;
    for (std::size_t tile_col = blockIdx.y; tile_col < tiles_across; tile_col += gridDim.y) {
        const std::size_t col0 = tile_col * kTileDim;
        if (row0 + kTileDim <= rows && col0 + kTileDim <= cols) move_inner_tile(in, out, rows, cols, row0, col0, tile);
        else move_edge_tile(in, out, rows, cols, row0, col0, tile);
        // Before the next tile overwrites this one, every thread has read its column.
        if (tile_col + gridDim.y < tiles_across) __syncthreads();
    }
}

}  // namespace
// END SOLUTION
// STARTER: // The side of the square tile, as in lecture 10: a block of K x K threads moves
// STARTER: // one K x K tile, one element per thread.
// STARTER: constexpr unsigned K = 32;
// STARTER:
// STARTER: // TODO 1: write lecture 10's tiled and padded transpose, for any rows and cols.
// STARTER: // Block (blockIdx.x, blockIdx.y) owns the tile of in whose first column is
// STARTER: // blockIdx.x * K and whose first row is blockIdx.y * K; thread (x, y) =
// STARTER: // (threadIdx.x, threadIdx.y) is one element of it.
// STARTER: //   * Load: tile[y][x] = in's element (row blockIdx.y * K + y, column
// STARTER: //     blockIdx.x * K + x), so a warp (32 threads with the same y) reads 32
// STARTER: //     neighbours in one row of in: coalesced. Skip threads outside the matrix.
// STARTER: //   * __syncthreads(): the whole tile must be in shared memory before anyone reads
// STARTER: //     from it. Every thread of the block must reach it, those outside too.
// STARTER: //   * Store: out's element (row blockIdx.x * K + y, column blockIdx.y * K + x) is
// STARTER: //     tile[x][y], so a warp writes 32 neighbours in one row of out (out is
// STARTER: //     cols x rows: its element (c, r) is out[c * rows + r]). Skip threads outside.
// STARTER: //   * Pad the tile by one column (float tile[K][K + 1]): tile[x][y] for x = 0..31
// STARTER: //     then lies in 32 different shared-memory banks instead of one.
// STARTER: // Use std::size_t for indices: rows * cols need not fit in an int.
// STARTER: __global__ void transpose_tiled_padded(const float* in, float* out, std::size_t rows, std::size_t cols) {
// STARTER:     // your code here, starting with the block's tile:
// STARTER:     //     __shared__ float tile[K][K + 1];
// STARTER: }

void transpose(const float* in, float* out, std::size_t rows, std::size_t cols) {
    // BEGIN SOLUTION
    const std::size_t tiles_across = (cols + kTileDim - 1) / kTileDim;
    const std::size_t tiles_down = (rows + kTileDim - 1) / kTileDim;
    const dim3 grid(static_cast<unsigned>(tiles_down), static_cast<unsigned>(tiles_across < kMaxGridY ? tiles_across : kMaxGridY));
    transpose_kernel<<<grid, dim3(kWarpSize, kBlockRows)>>>(in, out, rows, cols, tiles_across);
    LABKIT_CHECK_LAUNCH();
    // END SOLUTION
    // STARTER: // TODO 2: launch transpose_tiled_padded with blocks of K x K threads, dim3(K, K),
    // STARTER: // and a 2-D grid with one block per tile: ceil(cols / K) blocks in x (across the
    // STARTER: // columns of in) and ceil(rows / K) in y (down its rows). Check the launch with
    // STARTER: // LABKIT_CHECK_LAUNCH(). Do not synchronise with the host or allocate memory here.
    // STARTER: // Once it passes every case, make it faster: blocks of 32 x 8 threads in which each
    // STARTER: // thread moves 4 rows of the tile (4 independent loads in flight instead of 1),
    // STARTER: // then larger tiles (64 x 64) with more elements per thread.
    // STARTER: (void)in; (void)out; (void)rows; (void)cols; (void)K;
}
