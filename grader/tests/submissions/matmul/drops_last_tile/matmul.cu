#include "matmul.hpp"

constexpr int kTile = 32;

// The lecture's tiled kernel, written as if k were always a multiple of the tile: the
// loop over the tiles of k rounds down, so the products of a last, partial tile are lost.
__global__ void matmul_tiled(const float* a, const float* b, float* c, int m, int n, int k) {
    __shared__ float a_tile[kTile][kTile];
    __shared__ float b_tile[kTile][kTile];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * kTile + ty;
    const int col = blockIdx.x * kTile + tx;
    float sum = 0.0f;
    for (int t = 0; t < k / kTile; ++t) {  // whole tiles only: the last, partial tile of k is lost
        const int a_col = t * kTile + tx, b_row = t * kTile + ty;
        a_tile[ty][tx] = row < m && a_col < k ? a[static_cast<std::size_t>(row) * k + a_col] : 0.0f;
        b_tile[ty][tx] = b_row < k && col < n ? b[static_cast<std::size_t>(b_row) * n + col] : 0.0f;
        __syncthreads();
        for (int p = 0; p < kTile; ++p) sum += a_tile[ty][p] * b_tile[p][tx];
        __syncthreads();
    }
    if (row < m && col < n) c[static_cast<std::size_t>(row) * n + col] = sum;
}

void matmul(const float* a, const float* b, float* c, std::size_t m, std::size_t n, std::size_t k) {
    const dim3 block(kTile, kTile);
    const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile), static_cast<unsigned>((m + kTile - 1) / kTile));
    matmul_tiled<<<grid, block>>>(a, b, c, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k));
}
