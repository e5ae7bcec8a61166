// matmul ladder, rung 5: 2-D block tiling with vector loads. Rung 4's idea taken further:
// a block of 256 threads computes a 128 x 128 tile of C, each thread an 8 x 8 block of
// it (64 multiply-adds per step of k for 16 values read from shared memory, 4 per value),
// with k in steps of 8. And every memory access moves 16 bytes at a time:
//   * global memory: each thread loads one float4 (4 consecutive values of a row) of
//     the A tile and one of the B tile per step;
//   * shared memory: A's tile is stored transposed (k-major), so the 8 values of A a
//     thread needs at one step of k are contiguous, like its 8 values of B: two float4
//     reads each.
// float4 accesses need 16-byte alignment and whole groups of 4, so they are used when C,
// A and B divide into whole tiles and start on 16-byte boundaries; any other size takes
// the same kernel with element-by-element, bounds-checked loads and stores.
//
// What is left for rung 6 (the solution): a warp's reads of the B tile span 512 bytes
// (16 threads x 8 floats) and so take several shared-memory transactions each; arranging
// the threads of a warp as a 2-D grid over a warp tile makes them 128 bytes. And the
// block waits for every tile's global loads; double buffering overlaps them.
#include <cstdint>

#include "labkit/check.hpp"
#include "matmul.hpp"

namespace {

constexpr int kBlockM = 128, kBlockN = 128, kBlockK = 8;
constexpr int kThreadM = 8, kThreadN = 8;
constexpr int kThreadsAcross = kBlockN / kThreadN;                       // 16
constexpr int kThreads = (kBlockM / kThreadM) * kThreadsAcross;          // 256
static_assert(kBlockM * kBlockK == 4 * kThreads && kBlockK * kBlockN == 4 * kThreads,
              "each thread loads exactly one float4 of each tile");

// Elements (row, col) ... (row, col + 3) of a rows x cols row-major matrix; 0 outside it.
__device__ __forceinline__ float4 load4_guarded(const float* x, int rows, int cols, int row, int col) {
    float e[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
        e[i] = row < rows && col + i < cols ? x[static_cast<std::size_t>(row) * cols + col + i] : 0.0f;
    return make_float4(e[0], e[1], e[2], e[3]);
}

template <bool kGuarded>
__global__ void __launch_bounds__(kThreads)
    matmul_block_tiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m, int n,
                       int k) {
    __shared__ __align__(16) float a_tile[kBlockK][kBlockM];  // a_tile[p][i] = A[block_m + i][k0 + p]
    __shared__ __align__(16) float b_tile[kBlockK][kBlockN];  // b_tile[p][j] = B[k0 + p][block_n + j]
    const int t = threadIdx.x;
    const int block_m = blockIdx.y * kBlockM, block_n = blockIdx.x * kBlockN;
    const int thread_m = (t / kThreadsAcross) * kThreadM;  // this thread's 8 x 8 block of the tile
    const int thread_n = (t % kThreadsAcross) * kThreadN;
    // The float4 of each tile this thread loads: A row a_row, values a_col .. a_col + 3 of
    // k (two threads per row of 8); B row b_row, columns b_col .. b_col + 3.
    const int a_row = t / (kBlockK / 4), a_col = 4 * (t % (kBlockK / 4));
    const int b_row = t / (kBlockN / 4), b_col = 4 * (t % (kBlockN / 4));

    float acc[kThreadM][kThreadN] = {};
    for (int k0 = 0; k0 < k; k0 += kBlockK) {
        float4 av, bv;
        if constexpr (!kGuarded) {
            av = *reinterpret_cast<const float4*>(a + static_cast<std::size_t>(block_m + a_row) * k + k0 + a_col);
            bv = *reinterpret_cast<const float4*>(b + static_cast<std::size_t>(k0 + b_row) * n + block_n + b_col);
        } else {
            av = load4_guarded(a, m, k, block_m + a_row, k0 + a_col);
            bv = load4_guarded(b, k, n, k0 + b_row, block_n + b_col);
        }
        a_tile[a_col + 0][a_row] = av.x;  // transposed: the four values of k go to four rows
        a_tile[a_col + 1][a_row] = av.y;
        a_tile[a_col + 2][a_row] = av.z;
        a_tile[a_col + 3][a_row] = av.w;
        *reinterpret_cast<float4*>(&b_tile[b_row][b_col]) = bv;
        __syncthreads();
#pragma unroll
        for (int p = 0; p < kBlockK; ++p) {
            float a_reg[kThreadM], b_reg[kThreadN];
#pragma unroll
            for (int i = 0; i < kThreadM; i += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&a_tile[p][thread_m + i]);
                a_reg[i] = v.x;
                a_reg[i + 1] = v.y;
                a_reg[i + 2] = v.z;
                a_reg[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < kThreadN; j += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&b_tile[p][thread_n + j]);
                b_reg[j] = v.x;
                b_reg[j + 1] = v.y;
                b_reg[j + 2] = v.z;
                b_reg[j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < kThreadM; ++i)
#pragma unroll
                for (int j = 0; j < kThreadN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < kThreadM; ++i) {
        const int row = block_m + thread_m + i;
#pragma unroll
        for (int j = 0; j < kThreadN; j += 4) {
            const int col = block_n + thread_n + j;
            if constexpr (!kGuarded) {
                *reinterpret_cast<float4*>(c + static_cast<std::size_t>(row) * n + col) =
                    make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
            } else if (row < m) {
#pragma unroll
                for (int jj = 0; jj < 4; ++jj)
                    if (col + jj < n) c[static_cast<std::size_t>(row) * n + col + jj] = acc[i][j + jj];
            }
        }
    }
}

bool aligned_16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

void matmul(const float* a, const float* b, float* c, std::size_t m, std::size_t n, std::size_t k) {
    const dim3 grid(static_cast<unsigned>((n + kBlockN - 1) / kBlockN), static_cast<unsigned>((m + kBlockM - 1) / kBlockM));
    const bool whole_tiles = m % kBlockM == 0 && n % kBlockN == 0 && k % kBlockK == 0 && aligned_16(a) &&
                             aligned_16(b) && aligned_16(c);
    if (whole_tiles)
        matmul_block_tiled<false><<<grid, kThreads>>>(a, b, c, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k));
    else
        matmul_block_tiled<true><<<grid, kThreads>>>(a, b, c, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k));
    LABKIT_CHECK_LAUNCH();
}
