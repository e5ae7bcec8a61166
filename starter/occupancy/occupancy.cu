// Lab occupancy (lab sheet 06): a blocked matrix multiply, its occupancy by the formula
// and by the CUDA occupancy API, and a block size chosen for the best occupancy.
//
// What you practise here:
//   * Exercise 1: a blocked (tiled) matrix multiply with a fixed BLOCK_SIZE of 16: each
//     block loads square tiles of A and B into shared memory, so every value read from
//     global memory is used BLOCK_SIZE times (matmul_fixed).
//   * Exercise 1, part 2: the theoretical occupancy of a kernel, by the formula: how many
//     of its blocks one SM can hold, given its block size, registers and shared memory
//     (max_active_blocks_per_sm, theoretical_occupancy). The handout explains every
//     limit with the numbers of the grading GPU, an H100. Your answers must equal the
//     CUDA occupancy calculator's exactly, for GPUs from the T4 to the B200.
//   * Exercise 2: the same multiply with the block size the occupancy API chooses
//     (choose_block_size), the tile's side in __constant__ memory and the tiles in
//     dynamically allocated shared memory (required_shared_memory, matmul_dynamic).
//
// The lab binary prints the block size your matmul_dynamic chose, and `--bench` times it
// beside your matmul_fixed.
//
// Build and run:   cudalab run occupancy .          (checks every test case)
//                  cudalab run occupancy . --bench  (times matmul_dynamic and matmul_fixed)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "labkit/check.hpp"
#include "occupancy.hpp"

// ---- Exercise 1: the blocked matrix multiply ---------------------------------------------

// The side of matmul_fixed's square blocks and tiles: a BLOCK_SIZE x BLOCK_SIZE block of
// threads computes a BLOCK_SIZE x BLOCK_SIZE tile of C.
constexpr int BLOCK_SIZE = 16;

// The lab sheet's starting point: one thread per element of C, reading a whole row of A
// and a whole column of B from global memory, k loads of each for every element. It is
// correct, and slow.
//
// TODO 1: make it a blocked matrix multiply (the lab sheet's exercise 1). Each block of
// BLOCK_SIZE x BLOCK_SIZE threads computes one tile of C. For each BLOCK_SIZE-wide step
// along k: every thread loads one element of A's tile and one of B's tile into two
// __shared__ float arrays of [BLOCK_SIZE][BLOCK_SIZE]; __syncthreads(); every thread adds
// the products of its row of A's tile and its column of B's tile; __syncthreads() again.
// Any m, n and k must work: load 0.0f for elements past the edges of A and B, and let
// threads outside C take part in the loads and the __syncthreads() (no early return),
// writing C only where row < m and col < n.
__global__ void matmul_fixed_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    const int row = blockIdx.y * BLOCK_SIZE + threadIdx.y;
    const int col = blockIdx.x * BLOCK_SIZE + threadIdx.x;
    if (row >= m || col >= n) return;
    float sum = 0.0f;
    for (int i = 0; i < k; ++i)
        sum += a[static_cast<std::size_t>(row) * k + i] * b[static_cast<std::size_t>(i) * n + col];
    c[static_cast<std::size_t>(row) * n + col] = sum;
}

void matmul_fixed(const float* a, const float* b, float* c, int m, int n, int k) {
    const dim3 block(BLOCK_SIZE, BLOCK_SIZE);
    const dim3 grid((n + BLOCK_SIZE - 1) / BLOCK_SIZE, (m + BLOCK_SIZE - 1) / BLOCK_SIZE);
    matmul_fixed_kernel<<<grid, block>>>(a, b, c, m, n, k);
    LABKIT_CHECK_LAUNCH();
}

// ---- Exercise 1, part 2: occupancy by the formula ------------------------------------------

int max_active_blocks_per_sm(const cudaDeviceProp& prop, const cudaFuncAttributes& kernel, int block_size,
                             std::size_t dynamic_smem_bytes) {
    // TODO 2: how many blocks of this kernel one SM holds at once, by the formula. The
    // handout works through it with the grading GPU's numbers; every number it needs is
    // in prop and kernel, except the two allocation units, which the handout gives.
    // Compute each limit and return the least of them (0 when a block cannot run at all):
    //   * threads: an SM holds prop.maxThreadsPerMultiProcessor threads, in whole warps;
    //   * blocks: at most prop.maxBlocksPerMultiProcessor;
    //   * registers: kernel.numRegs per thread, given to each warp in units of 256 registers,
    //     from one of four equal banks of prop.regsPerMultiprocessor registers;
    //   * shared memory: kernel.sharedSizeBytes + dynamic_smem_bytes +
    //     prop.reservedSharedMemPerBlock per block, rounded up to the allocation granularity,
    //     out of prop.sharedMemPerMultiprocessor; and no block at all when
    //     dynamic_smem_bytes > kernel.maxDynamicSharedSizeBytes.
    (void)prop; (void)kernel; (void)block_size; (void)dynamic_smem_bytes;
    return 0;
}

double theoretical_occupancy(const cudaDeviceProp& prop, int active_blocks_per_sm, int block_size) {
    // TODO 3: the theoretical occupancy of one SM: the warps of active_blocks_per_sm blocks
    // of block_size threads (a partial warp counts as a whole one) over the most warps an SM
    // holds, prop.maxThreadsPerMultiProcessor / prop.warpSize.
    (void)prop; (void)active_blocks_per_sm; (void)block_size;
    return 0.0;
}

// ---- Exercise 2: the block size with the best occupancy ------------------------------------

std::size_t required_shared_memory(int block_size) {
    // TODO 4: the lab sheet's requiredSM: the dynamic shared memory matmul_dynamic_kernel needs
    // for a block of block_size threads: two square tiles of floats (one of A, one of B) of
    // block_size elements each.
    (void)block_size;
    return 0;
}

int choose_block_size(const void* kernel) {
    // TODO 5: ask cudaOccupancyMaxPotentialBlockSizeVariableSMem for the block size of
    // `kernel` with the best occupancy, given required_shared_memory (pass the function
    // itself: the API calls it for every block size it tries). Wrap the call in
    // LABKIT_CHECK(...). Then round the block size down to a power of 4 (1, 4, 16, 64, 256,
    // 1024), the lab sheet's 4^floor(log(t) / log(4)): careful, in floating point
    // log(64) / log(4) can come out a hair below 3.
    (void)kernel;
    return 0;
}

// TODO 6: matmul_dynamic_kernel, a copy of your matmul_fixed_kernel that
//   * reads the tile's side from a variable in constant memory instead of BLOCK_SIZE:
//       __constant__ int tile_side;   (set with cudaMemcpyToSymbol before the first launch)
//   * keeps both tiles in dynamically allocated shared memory, one linear block:
//       extern __shared__ float tiles[];   A's tile at tiles[0], B's at tiles[side * side],
//     indexed by hand (tile[row * side + column]).

void matmul_dynamic(const float* a, const float* b, float* c, int m, int n, int k) {
    // TODO 7: on the first call only (a static variable), choose the block size with
    // choose_block_size(reinterpret_cast<const void*>(&matmul_dynamic_kernel)), take its square
    // root as the tile's side (the lab sheet uses sqrt), copy the side to constant memory with
    // cudaMemcpyToSymbol, and print the block size once. Then, on every call, launch
    // matmul_dynamic_kernel with blocks of side x side threads, enough blocks to cover C, and
    // required_shared_memory(side * side) bytes of dynamic shared memory as the third
    // launch parameter; check the launch with LABKIT_CHECK_LAUNCH().
    (void)a; (void)b; (void)c; (void)m; (void)n; (void)k;
}
