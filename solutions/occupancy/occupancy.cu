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

// BEGIN SOLUTION
// Thread (tx, ty) of block (bx, by) computes C[row][col], row = by * BLOCK_SIZE + ty and
// col = bx * BLOCK_SIZE + tx. Tile by tile along k, the block loads a BLOCK_SIZE-square
// tile of A (its rows) and of B (its columns) into shared memory, one element per thread,
// then each thread adds the products of its row of the A tile and its column of the B
// tile. Elements past the edges of A and B load as 0, so any m, n and k work; threads
// outside C still load their share and wait at every __syncthreads().
__global__ void matmul_fixed_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                    int m, int n, int k) {
    __shared__ float a_tile[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ float b_tile[BLOCK_SIZE][BLOCK_SIZE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * BLOCK_SIZE + ty;
    const int col = blockIdx.x * BLOCK_SIZE + tx;
    float sum = 0.0f;
    for (int tile = 0; tile < k; tile += BLOCK_SIZE) {
        // Consecutive threads (tx) read consecutive addresses of both matrices: coalesced.
        a_tile[ty][tx] = row < m && tile + tx < k ? a[static_cast<std::size_t>(row) * k + tile + tx] : 0.0f;
        b_tile[ty][tx] = tile + ty < k && col < n ? b[static_cast<std::size_t>(tile + ty) * n + col] : 0.0f;
        __syncthreads();  // the whole tile is loaded before anyone reads it
#pragma unroll
        for (int i = 0; i < BLOCK_SIZE; ++i) sum += a_tile[ty][i] * b_tile[i][tx];
        __syncthreads();  // everyone is done with the tile before the next one overwrites it
    }
    if (row < m && col < n) c[static_cast<std::size_t>(row) * n + col] = sum;
}
// END SOLUTION
// STARTER: // The lab sheet's starting point: one thread per element of C, reading a whole row of A
// STARTER: // and a whole column of B from global memory, k loads of each for every element. It is
// STARTER: // correct, and slow.
// STARTER: //
// STARTER: // TODO 1: make it a blocked matrix multiply (the lab sheet's exercise 1). Each block of
// STARTER: // BLOCK_SIZE x BLOCK_SIZE threads computes one tile of C. For each BLOCK_SIZE-wide step
// STARTER: // along k: every thread loads one element of A's tile and one of B's tile into two
// STARTER: // __shared__ float arrays of [BLOCK_SIZE][BLOCK_SIZE]; __syncthreads(); every thread adds
// STARTER: // the products of its row of A's tile and its column of B's tile; __syncthreads() again.
// STARTER: // Any m, n and k must work: load 0.0f for elements past the edges of A and B, and let
// STARTER: // threads outside C take part in the loads and the __syncthreads() (no early return),
// STARTER: // writing C only where row < m and col < n.
// STARTER: __global__ void matmul_fixed_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
// STARTER:     const int row = blockIdx.y * BLOCK_SIZE + threadIdx.y;
// STARTER:     const int col = blockIdx.x * BLOCK_SIZE + threadIdx.x;
// STARTER:     if (row >= m || col >= n) return;
// STARTER:     float sum = 0.0f;
// STARTER:     for (int i = 0; i < k; ++i)
// STARTER:         sum += a[static_cast<std::size_t>(row) * k + i] * b[static_cast<std::size_t>(i) * n + col];
// STARTER:     c[static_cast<std::size_t>(row) * n + col] = sum;
// STARTER: }

void matmul_fixed(const float* a, const float* b, float* c, int m, int n, int k) {
    const dim3 block(BLOCK_SIZE, BLOCK_SIZE);
    const dim3 grid((n + BLOCK_SIZE - 1) / BLOCK_SIZE, (m + BLOCK_SIZE - 1) / BLOCK_SIZE);
    matmul_fixed_kernel<<<grid, block>>>(a, b, c, m, n, k);
    LABKIT_CHECK_LAUNCH();
}

// ---- Exercise 1, part 2: occupancy by the formula ------------------------------------------
// BEGIN SOLUTION
namespace {

// What the formula needs that cudaDeviceProp does not say (the handout gives them).
// Registers go to a warp 256 at a time, out of one of four equal banks of the SM's
// register file (one per warp scheduler): a warp never takes registers from two banks.
constexpr int kRegisterAllocationUnit = 256;
constexpr int kRegisterBanksPerSm = 4;

// Shared memory goes to a block in units of 128 bytes (compute capability 8.0 and
// newer) or 256 bytes (7.x).
std::size_t shared_memory_granularity(const cudaDeviceProp& prop) { return prop.major >= 8 ? 128 : 256; }

template <class T> T round_up(T x, T unit) { return (x + unit - 1) / unit * unit; }

}  // namespace
// END SOLUTION

int max_active_blocks_per_sm(const cudaDeviceProp& prop, const cudaFuncAttributes& kernel, int block_size,
                             std::size_t dynamic_smem_bytes) {
    // BEGIN SOLUTION
    if (block_size < 1 || block_size > prop.maxThreadsPerBlock) return 0;
    const int warps_per_block = (block_size + prop.warpSize - 1) / prop.warpSize;  // a partial warp is a whole one

    // Threads: an SM holds maxThreadsPerMultiProcessor threads, counted in whole warps.
    const int by_warps = prop.maxThreadsPerMultiProcessor / prop.warpSize / warps_per_block;

    // Blocks: an SM holds at most maxBlocksPerMultiProcessor blocks, however small.
    const int by_blocks = prop.maxBlocksPerMultiProcessor;

    // Registers: each warp gets numRegs x 32 registers, rounded up to the allocation
    // unit, from one bank; a bank holds as many such warps as fit in it whole.
    int by_registers = by_blocks;  // a kernel without registers is not limited by them
    if (kernel.numRegs > 0) {
        const int registers_per_warp = round_up(kernel.numRegs * prop.warpSize, kRegisterAllocationUnit);
        const int warps_per_bank = prop.regsPerMultiprocessor / kRegisterBanksPerSm / registers_per_warp;
        by_registers = warps_per_bank * kRegisterBanksPerSm / warps_per_block;
    }

    // Shared memory: a launch may not ask for more dynamic shared memory than the kernel
    // allows (48 KiB in all unless it opted in to more). A block takes its static and
    // dynamic shared memory plus the driver's reservation, rounded up to the granularity.
    if (dynamic_smem_bytes > static_cast<std::size_t>(kernel.maxDynamicSharedSizeBytes)) return 0;
    const std::size_t shared_per_block = round_up(
        kernel.sharedSizeBytes + dynamic_smem_bytes + prop.reservedSharedMemPerBlock, shared_memory_granularity(prop));
    if (shared_per_block > prop.sharedMemPerBlockOptin + prop.reservedSharedMemPerBlock) return 0;
    int by_shared = by_blocks;  // a block without shared memory is not limited by it
    if (shared_per_block > 0) by_shared = static_cast<int>(prop.sharedMemPerMultiprocessor / shared_per_block);

    return std::min({by_warps, by_blocks, by_registers, by_shared});
    // END SOLUTION
    // STARTER: // TODO 2: how many blocks of this kernel one SM holds at once, by the formula. The
    // STARTER: // handout works through it with the grading GPU's numbers; every number it needs is
    // STARTER: // in prop and kernel, except the two allocation units, which the handout gives.
    // STARTER: // Compute each limit and return the least of them (0 when a block cannot run at all):
    // STARTER: //   * threads: an SM holds prop.maxThreadsPerMultiProcessor threads, in whole warps;
    // STARTER: //   * blocks: at most prop.maxBlocksPerMultiProcessor;
    // STARTER: //   * registers: kernel.numRegs per thread, given to each warp in units of 256 registers,
    // STARTER: //     from one of four equal banks of prop.regsPerMultiprocessor registers;
    // STARTER: //   * shared memory: kernel.sharedSizeBytes + dynamic_smem_bytes +
    // STARTER: //     prop.reservedSharedMemPerBlock per block, rounded up to the allocation granularity,
    // STARTER: //     out of prop.sharedMemPerMultiprocessor; and no block at all when
    // STARTER: //     dynamic_smem_bytes > kernel.maxDynamicSharedSizeBytes.
    // STARTER: (void)prop; (void)kernel; (void)block_size; (void)dynamic_smem_bytes;
    // STARTER: return 0;
}

double theoretical_occupancy(const cudaDeviceProp& prop, int active_blocks_per_sm, int block_size) {
    // BEGIN SOLUTION
    const int warps_per_block = (block_size + prop.warpSize - 1) / prop.warpSize;
    const int max_warps_per_sm = prop.maxThreadsPerMultiProcessor / prop.warpSize;
    return static_cast<double>(active_blocks_per_sm * warps_per_block) / static_cast<double>(max_warps_per_sm);
    // END SOLUTION
    // STARTER: // TODO 3: the theoretical occupancy of one SM: the warps of active_blocks_per_sm blocks
    // STARTER: // of block_size threads (a partial warp counts as a whole one) over the most warps an SM
    // STARTER: // holds, prop.maxThreadsPerMultiProcessor / prop.warpSize.
    // STARTER: (void)prop; (void)active_blocks_per_sm; (void)block_size;
    // STARTER: return 0.0;
}

// ---- Exercise 2: the block size with the best occupancy ------------------------------------

std::size_t required_shared_memory(int block_size) {
    // BEGIN SOLUTION
    return 2 * static_cast<std::size_t>(block_size) * sizeof(float);  // a tile of A and a tile of B
    // END SOLUTION
    // STARTER: // TODO 4: the lab sheet's requiredSM: the dynamic shared memory matmul_dynamic_kernel needs
    // STARTER: // for a block of block_size threads: two square tiles of floats (one of A, one of B) of
    // STARTER: // block_size elements each.
    // STARTER: (void)block_size;
    // STARTER: return 0;
}

int choose_block_size(const void* kernel) {
    // BEGIN SOLUTION
    int min_grid_size = 0, block_size = 0;
    LABKIT_CHECK(cudaOccupancyMaxPotentialBlockSizeVariableSMem(&min_grid_size, &block_size, kernel,
                                                                required_shared_memory));
    if (block_size < 1) return 0;  // the kernel cannot run at all
    // The lab sheet's 4^floor(log(t) / log(4)), in integers: in floating point,
    // log(64) / log(4) may come out just below 3 and floor to 2.
    int power_of_4 = 1;
    while (power_of_4 * 4 <= block_size) power_of_4 *= 4;
    return power_of_4;
    // END SOLUTION
    // STARTER: // TODO 5: ask cudaOccupancyMaxPotentialBlockSizeVariableSMem for the block size of
    // STARTER: // `kernel` with the best occupancy, given required_shared_memory (pass the function
    // STARTER: // itself: the API calls it for every block size it tries). Wrap the call in
    // STARTER: // LABKIT_CHECK(...). Then round the block size down to a power of 4 (1, 4, 16, 64, 256,
    // STARTER: // 1024), the lab sheet's 4^floor(log(t) / log(4)): careful, in floating point
    // STARTER: // log(64) / log(4) can come out a hair below 3.
    // STARTER: (void)kernel;
    // STARTER: return 0;
}

// BEGIN SOLUTION
// The side of matmul_dynamic_kernel's square blocks and tiles, sqrt(threads per block):
// chosen at run time, so no longer a compile-time BLOCK_SIZE but a variable in constant
// memory, which every thread reads at once (one broadcast from the constant cache).
__constant__ int tile_side;

// matmul_fixed_kernel with a tile side of tile_side: the two tiles live in one block of
// dynamically allocated shared memory (the launch's third parameter), A's first and B's
// after it, indexed by hand (row * side + column).
__global__ void matmul_dynamic_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                      int m, int n, int k) {
    extern __shared__ float tiles[];
    const int side = tile_side;
    float* a_tile = tiles;
    float* b_tile = tiles + side * side;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * side + ty;
    const int col = blockIdx.x * side + tx;
    float sum = 0.0f;
    for (int tile = 0; tile < k; tile += side) {
        a_tile[ty * side + tx] = row < m && tile + tx < k ? a[static_cast<std::size_t>(row) * k + tile + tx] : 0.0f;
        b_tile[ty * side + tx] = tile + ty < k && col < n ? b[static_cast<std::size_t>(tile + ty) * n + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < side; ++i) sum += a_tile[ty * side + i] * b_tile[i * side + tx];
        __syncthreads();
    }
    if (row < m && col < n) c[static_cast<std::size_t>(row) * n + col] = sum;
}

// The tile side, chosen on the first call: the block size with the best occupancy
// (choose_block_size), its square root copied to constant memory and printed once.
int chosen_tile_side() {
    static const int side = [] {
        const int threads = choose_block_size(reinterpret_cast<const void*>(&matmul_dynamic_kernel));
        if (threads < 1) throw std::runtime_error("matmul_dynamic_kernel cannot run on this GPU at any block size");
        const int s = static_cast<int>(std::lround(std::sqrt(static_cast<double>(threads))));
        LABKIT_CHECK(cudaMemcpyToSymbol(tile_side, &s, sizeof s));
        std::printf("matmul_dynamic: %d threads per block (%d x %d tiles), the best occupancy rounded down to a "
                    "power of 4\n",
                    threads, s, s);
        return s;
    }();
    return side;
}
// END SOLUTION
// STARTER: // TODO 6: matmul_dynamic_kernel, a copy of your matmul_fixed_kernel that
// STARTER: //   * reads the tile's side from a variable in constant memory instead of BLOCK_SIZE:
// STARTER: //       __constant__ int tile_side;   (set with cudaMemcpyToSymbol before the first launch)
// STARTER: //   * keeps both tiles in dynamically allocated shared memory, one linear block:
// STARTER: //       extern __shared__ float tiles[];   A's tile at tiles[0], B's at tiles[side * side],
// STARTER: //     indexed by hand (tile[row * side + column]).

void matmul_dynamic(const float* a, const float* b, float* c, int m, int n, int k) {
    // BEGIN SOLUTION
    const int side = chosen_tile_side();
    const dim3 block(side, side);
    const dim3 grid((n + side - 1) / side, (m + side - 1) / side);
    matmul_dynamic_kernel<<<grid, block, required_shared_memory(side * side)>>>(a, b, c, m, n, k);
    LABKIT_CHECK_LAUNCH();
    // END SOLUTION
    // STARTER: // TODO 7: on the first call only (a static variable), choose the block size with
    // STARTER: // choose_block_size(reinterpret_cast<const void*>(&matmul_dynamic_kernel)), take its square
    // STARTER: // root as the tile's side (the lab sheet uses sqrt), copy the side to constant memory with
    // STARTER: // cudaMemcpyToSymbol, and print the block size once. Then, on every call, launch
    // STARTER: // matmul_dynamic_kernel with blocks of side x side threads, enough blocks to cover C, and
    // STARTER: // required_shared_memory(side * side) bytes of dynamic shared memory as the third
    // STARTER: // launch parameter; check the launch with LABKIT_CHECK_LAUNCH().
    // STARTER: (void)a; (void)b; (void)c; (void)m; (void)n; (void)k;
}
