// matmul ladder, rung 4: tiling for registers (lecture L5: unroll-and-jam and scalar
// replacement). The tiled kernel of rungs 2 and 3 does one multiply-add per value it
// reads from shared memory, and shared memory, not the arithmetic, then sets its speed.
// Unrolling the loops over rows (i) and columns (j) of C by 4 and fusing ("jamming") the
// copies of the k loop gives each thread a 4 x 4 block of outputs: per step of k it
// reads 4 values of A and 4 of B into registers (scalar replacement) and does their 16
// multiply-adds, 2 per value read. "More unrolling is better up to a point where
// registers are exceeded": rungs 5 and 6 go to 8 x 8.
//
// A block of 16 x 16 threads computes a 64 x 64 tile of C, with tiles of A (64 x 16) and
// B (16 x 64) in shared memory. Thread (tx, ty) takes rows ty, ty + 16, ty + 32, ty + 48
// and the same spread of columns from tx: neighbouring threads take neighbouring
// columns, so their reads of B's tile hit distinct banks and their stores to C are
// coalesced. Any size: loads outside A or B give 0, stores outside C are skipped.
#include "labkit/check.hpp"
#include "matmul.hpp"

namespace {

constexpr int kThreadsPerSide = 16;                               // 16 x 16 = 256 threads
constexpr int kOutputsPerSide = 4;                                // each thread: 4 x 4 elements of C
constexpr int kTileMN = kThreadsPerSide * kOutputsPerSide;        // the block's 64 x 64 tile of C
constexpr int kTileK = 16;                                        // values of k per tile
constexpr int kThreads = kThreadsPerSide * kThreadsPerSide;
constexpr int kLoadsPerThread = kTileMN * kTileK / kThreads;      // 4 elements of each tile
static_assert(kLoadsPerThread * kThreads == kTileMN * kTileK);

__global__ void __launch_bounds__(kThreads)
    matmul_register_blocked(const float* a, const float* b, float* c, int m, int n, int k) {
    __shared__ float a_tile[kTileMN][kTileK];
    __shared__ float b_tile[kTileK][kTileMN];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int t = ty * kThreadsPerSide + tx;
    const int block_m = blockIdx.y * kTileMN, block_n = blockIdx.x * kTileMN;

    float sum[kOutputsPerSide][kOutputsPerSide] = {};
    for (int k0 = 0; k0 < k; k0 += kTileK) {
        // Element `e` of each tile in row-major order goes to thread e % 256: the reads of
        // a warp cover whole rows of the tile (coalesced), its stores consecutive words.
#pragma unroll
        for (int v = 0; v < kLoadsPerThread; ++v) {
            const int e = t + v * kThreads;
            const int a_row = block_m + e / kTileK, a_col = k0 + e % kTileK;
            a_tile[e / kTileK][e % kTileK] =
                a_row < m && a_col < k ? a[static_cast<std::size_t>(a_row) * k + a_col] : 0.0f;
            const int b_row = k0 + e / kTileMN, b_col = block_n + e % kTileMN;
            b_tile[e / kTileMN][e % kTileMN] =
                b_row < k && b_col < n ? b[static_cast<std::size_t>(b_row) * n + b_col] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < kTileK; ++p) {
            float a_reg[kOutputsPerSide], b_reg[kOutputsPerSide];  // scalar replacement
#pragma unroll
            for (int i = 0; i < kOutputsPerSide; ++i) a_reg[i] = a_tile[ty + i * kThreadsPerSide][p];
#pragma unroll
            for (int j = 0; j < kOutputsPerSide; ++j) b_reg[j] = b_tile[p][tx + j * kThreadsPerSide];
#pragma unroll
            for (int i = 0; i < kOutputsPerSide; ++i)
#pragma unroll
                for (int j = 0; j < kOutputsPerSide; ++j) sum[i][j] += a_reg[i] * b_reg[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < kOutputsPerSide; ++i) {
        const int row = block_m + ty + i * kThreadsPerSide;
#pragma unroll
        for (int j = 0; j < kOutputsPerSide; ++j) {
            const int col = block_n + tx + j * kThreadsPerSide;
            if (row < m && col < n) c[static_cast<std::size_t>(row) * n + col] = sum[i][j];
        }
    }
}

}  // namespace

void matmul(const float* a, const float* b, float* c, std::size_t m, std::size_t n, std::size_t k) {
    const dim3 block(kThreadsPerSide, kThreadsPerSide);
    const dim3 grid(static_cast<unsigned>((n + kTileMN - 1) / kTileMN), static_cast<unsigned>((m + kTileMN - 1) / kTileMN));
    matmul_register_blocked<<<grid, block>>>(a, b, c, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k));
    LABKIT_CHECK_LAUNCH();
}
