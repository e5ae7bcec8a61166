// matmul ladder, rung 1: one thread per element of C, operands straight from global
// memory (the lecture's simpleMMM, with the bounds check that makes it work for any
// size). Thread (tx, ty) of block (bx, by) computes c[row][col], row = by * 16 + ty and
// col = bx * 16 + tx, as the dot product of row `row` of A and column `col` of B.
//
// Consecutive threads of a warp take consecutive columns, so their reads of B and their
// writes of C are coalesced, and they all read the same element of A (one broadcast).
// Still, every multiply-add needs two floats from global memory: a CGMA ratio of 1, so
// the memory system, not the arithmetic, sets the speed. The caches of a recent GPU
// soften that (neighbouring threads and warps reread the same rows and columns), but
// the next rungs stop relying on them.
#include "labkit/check.hpp"
#include "matmul.hpp"

namespace {

constexpr int kBlockWidth = 16;  // 16 x 16 = 256 threads per block

__global__ void matmul_naive(const float* a, const float* b, float* c, int m, int n, int k) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m && col < n) {
        const float* a_row = a + static_cast<std::size_t>(row) * k;
        float sum = 0.0f;
        for (int p = 0; p < k; ++p) sum += a_row[p] * b[static_cast<std::size_t>(p) * n + col];
        c[static_cast<std::size_t>(row) * n + col] = sum;
    }
}

}  // namespace

void matmul(const float* a, const float* b, float* c, std::size_t m, std::size_t n, std::size_t k) {
    const dim3 block(kBlockWidth, kBlockWidth);
    const dim3 grid(static_cast<unsigned>((n + kBlockWidth - 1) / kBlockWidth),
                    static_cast<unsigned>((m + kBlockWidth - 1) / kBlockWidth));
    matmul_naive<<<grid, block>>>(a, b, c, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k));
    LABKIT_CHECK_LAUNCH();
}
