#include "transpose.hpp"

constexpr unsigned K = 32;

// Lecture 10's tiled and padded transpose with the barrier left out: a thread reads
// tile[x][y], which a thread of another warp may not have written yet.
__global__ void transpose_tiled(const float* in, float* out, std::size_t rows, std::size_t cols) {
    __shared__ float tile[K][K + 1];
    const std::size_t col0 = static_cast<std::size_t>(blockIdx.x) * K, row0 = static_cast<std::size_t>(blockIdx.y) * K;
    const unsigned x = threadIdx.x, y = threadIdx.y;
    if (row0 + y < rows && col0 + x < cols) tile[y][x] = in[(row0 + y) * cols + col0 + x];
    if (col0 + y < cols && row0 + x < rows) out[(col0 + y) * rows + row0 + x] = tile[x][y];
}

void transpose(const float* in, float* out, std::size_t rows, std::size_t cols) {
    const dim3 grid(static_cast<unsigned>((cols + K - 1) / K), static_cast<unsigned>((rows + K - 1) / K));
    transpose_tiled<<<grid, dim3(K, K)>>>(in, out, rows, cols);
}
