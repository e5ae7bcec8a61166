// The lecture's tiled kernel, shared by the rungs tiled_16.cu and tiled_32.cu, which
// differ only in the tile width.
//
// One block computes a kTile x kTile tile of C, one thread per element. The dot
// products run in phases, one per tile of k: the block's threads copy a kTile x kTile
// tile of A and one of B into shared memory, one element each (coalesced: consecutive
// threads read consecutive elements of a row), wait for each other, and then every thread
// reads kTile values of each tile from shared memory. Each float read from global memory
// now serves kTile multiply-adds instead of one.
//
// Any size: the lecture assumes multiples of the tile and notes that a thread outside C
// cannot simply stop ("can't do test because of sync"): it must still load its share and
// reach every __syncthreads(). So every thread loads, an element outside A or B is
// stored in the tile as 0 (the padding happens in shared memory, not in the matrices;
// a 0 adds nothing), and only the final store is guarded.
#pragma once

#include <cstddef>

#include "labkit/check.hpp"
#include "matmul.hpp"

namespace tiled {

template <int kTile>
__global__ void __launch_bounds__(kTile * kTile) matmul_tiled(const float* a, const float* b, float* c, int m, int n,
                                                              int k) {
    __shared__ float a_tile[kTile][kTile];
    __shared__ float b_tile[kTile][kTile];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * kTile + ty;
    const int col = blockIdx.x * kTile + tx;

    float sum = 0.0f;
    for (int t = 0; t < (k + kTile - 1) / kTile; ++t) {
        const int a_col = t * kTile + tx;  // this thread's element of the A tile: A[row][a_col]
        const int b_row = t * kTile + ty;  // and of the B tile: B[b_row][col]
        a_tile[ty][tx] = row < m && a_col < k ? a[static_cast<std::size_t>(row) * k + a_col] : 0.0f;
        b_tile[ty][tx] = b_row < k && col < n ? b[static_cast<std::size_t>(b_row) * n + col] : 0.0f;
        __syncthreads();  // the tiles are complete before anyone reads them
        // a_tile[ty][p] is the same address for a whole row of threads (a broadcast);
        // b_tile[p][tx] is a different bank for each thread of a row: no bank conflicts.
#pragma unroll
        for (int p = 0; p < kTile; ++p) sum += a_tile[ty][p] * b_tile[p][tx];
        __syncthreads();  // everyone is done with the tiles before the next phase overwrites them
    }
    if (row < m && col < n) c[static_cast<std::size_t>(row) * n + col] = sum;
}

template <int kTile>
void multiply(const float* a, const float* b, float* c, std::size_t m, std::size_t n, std::size_t k) {
    const dim3 block(kTile, kTile);
    const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile), static_cast<unsigned>((m + kTile - 1) / kTile));
    matmul_tiled<kTile><<<grid, block>>>(a, b, c, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k));
    LABKIT_CHECK_LAUNCH();
}

}  // namespace tiled
