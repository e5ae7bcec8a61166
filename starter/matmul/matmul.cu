// Lab matmul: C = A*B for float matrices, row-major, of any size.
//
// What you practise here (the PMPP lecture on tiled matrix multiplication, lecture L5 on
// tiling for registers, lab sheet 06): the naive kernel reads two floats from global
// memory for every multiply-add (a CGMA ratio of 1), so the memory, not the arithmetic,
// sets its speed. A block that copies a tile of A and a tile of B into shared memory
// once and lets every thread reuse them divides that traffic by the tile width. Then the
// same idea one level down: each thread keeps several outputs and the operands they
// share in registers (unroll-and-jam), so that it does many multiply-adds per value it
// reads from shared memory.
//
// Sizes are arbitrary: no dimension is a multiple of the tile in general, so the tiles
// at the edges are partial. Load 0 for an element outside A or B (it adds nothing) and
// do not store outside C. Every thread must still reach every __syncthreads().
//
// The answer is checked against the exact product, element by element, within the
// rounding any order of float multiply-adds can produce, fused (FMA) or not: the handout
// explains the bound. A term left out or counted twice is far outside it.
//
// Build and run:   cudalab run matmul .          (checks every test case)
//                  cudalab run matmul . --bench  (times it against cuBLAS)
#include <cstdint>

#include "labkit/check.hpp"
#include "matmul.hpp"

// The tile width: each block computes a kTile x kTile tile of C with one thread per
// element, and copies kTile x kTile tiles of A and B into shared memory.
constexpr int kTile = 32;

// TODO 1: the lecture's tiled kernel, for any m, n and k. Thread (tx, ty) of block
// (bx, by) computes c[row][col] with row = by * kTile + ty and col = bx * kTile + tx:
//   * Declare the two shared tiles: __shared__ float a_tile[kTile][kTile], b_tile[kTile][kTile];
//   * Loop over the tiles of k: t = 0, 1, ..., ceil(k / kTile) - 1. (k need not be a
//     multiple of kTile: the last tile is partial.)
//       - Load: a_tile[ty][tx] = A[row][t * kTile + tx] and b_tile[ty][tx] =
//         B[t * kTile + ty][col], or 0.0f where that element lies outside A or B
//         (a 0 adds nothing to the sum). A[i][p] is a[i * k + p], B[p][j] is b[p * n + j].
//       - __syncthreads(): the tiles are complete before anyone reads them.
//       - Add a_tile[ty][p] * b_tile[p][tx] for p = 0 .. kTile-1 to a running sum.
//       - __syncthreads(): everyone is done with the tiles before they are overwritten.
//     Every thread takes part in every load and every __syncthreads(), even one whose
//     row or col lies outside C.
//   * Store the sum to c[row * n + col], only if row < m and col < n.
__global__ void matmul_tiled_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    // your code here
    (void)a; (void)b; (void)c; (void)m; (void)n; (void)k;
}

void matmul(const float* a, const float* b, float* c, std::size_t m, std::size_t n, std::size_t k) {
    // TODO 2: one block of kTile x kTile threads per tile of C, and enough blocks to
    // cover all of C: ceil(n / kTile) across (x: columns), ceil(m / kTile) down (y:
    // rows). The launch goes to the default stream and is checked right after; do not
    // synchronise with the host or allocate memory here.
    const dim3 block(kTile, kTile);
    const dim3 grid(1, 1);  // TODO: enough blocks for all of C
    matmul_tiled_kernel<<<grid, block>>>(a, b, c, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k));
    LABKIT_CHECK_LAUNCH();
    // Once it passes every case, make it faster, one step at a time (the ladder's rungs):
    // several outputs per thread from registers (unroll-and-jam), a transposed A tile and
    // float4 loads, then warp tiles and double-buffered shared memory.
}
