// The student API of lab occupancy. The harness calls these functions; the student
// implements them in occupancy.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

// How many blocks of a kernel one SM can hold at once, by the formula (the handout
// explains it, with the numbers for the grading GPU): the least of the limits set by
// threads (whole warps), the blocks-per-SM limit, registers (allocated per warp, 256 at a
// time, from four equal banks per SM) and shared memory (static + dynamic + the
// driver's per-block reservation, rounded up to the allocation granularity); 0 when a
// block cannot run at all. `prop` describes the GPU and `kernel` the kernel's resources
// (numRegs, sharedSizeBytes, maxDynamicSharedSizeBytes, maxThreadsPerBlock); they are
// often GPUs and kernels that are not in this machine. A pure host function: it is given
// no kernel to ask the CUDA occupancy API about, so it cannot, and it may not use CUDA's
// own calculator (cuda_occupancy.h) either: the formula is yours.
int max_active_blocks_per_sm(const cudaDeviceProp& prop, const cudaFuncAttributes& kernel, int block_size,
                             std::size_t dynamic_smem_bytes);

// The theoretical occupancy of one SM: active warps / the most warps an SM can hold,
// where active warps = active_blocks_per_sm * (warps per block, a partial warp counting
// as a whole one) and the most warps = maxThreadsPerMultiProcessor / warpSize. A value
// in [0, 1].
double theoretical_occupancy(const cudaDeviceProp& prop, int active_blocks_per_sm, int block_size);

// The lab sheet's requiredSM: the bytes of dynamic shared memory matmul_dynamic's kernel
// needs for a block of block_size threads. The contract, tested for every block size
// from 1 to 1024: the block is a square tile of side sqrt(block_size), and it keeps one
// tile of A and one tile of B, floats, so it needs 2 * block_size * sizeof(float) bytes.
std::size_t required_shared_memory(int block_size);

// The block size (threads per block) to launch `kernel` with:
// cudaOccupancyMaxPotentialBlockSizeVariableSMem on `kernel`, with required_shared_memory
// as its block-size-to-dynamic-shared-memory function, rounded down to a power of 4 (the
// lab sheet's 4^floor(log(t) / log(4))), so that the block is a square tile. `kernel` is
// a __global__ function's address, e.g. reinterpret_cast<const void*>(my_kernel).
int choose_block_size(const void* kernel);

// C = A * B, row-major: A is m x k, B is k x n, C is m x n, all on the device; any sizes
// (m, n, k >= 1). Exercise 1: a tiled kernel with a compile-time BLOCK_SIZE of 16 and
// static shared memory. Launch on the default stream; no host synchronisation.
void matmul_fixed(const float* a, const float* b, float* c, int m, int n, int k);

// The same product. Exercise 2: the block size comes from choose_block_size on this
// function's own kernel, chosen once (on the first call, which also prints it to stdout
// once); the tile's side lives in __constant__ memory (cudaMemcpyToSymbol), and the two
// tiles in dynamically allocated shared memory (required_shared_memory bytes, the third
// launch parameter). Launch on the default stream; no host synchronisation after the
// first call.
void matmul_dynamic(const float* a, const float* b, float* c, int m, int n, int k);
