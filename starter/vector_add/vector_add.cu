// Lab 1: vector addition, c = a + b.
//
// What you practise here (lecture 1): writing a kernel, choosing its launch
// configuration so that every element is covered for any n, checking every CUDA call,
// and then making a memory-bound kernel move bytes as fast as the GPU allows.
//
// Build and run:   cudalab run vector_add .          (checks every test case)
//                  cudalab run vector_add . --bench  (times it against the copy roof)
#include <cstdint>

#include "labkit/check.hpp"
#include "vector_add.hpp"

// Threads per block: a multiple of the warp size (32), so no warp is left half empty.
constexpr int kThreadsPerBlock = 256;

// TODO 1: write the kernel. Each thread computes the index of the element it
// owns from blockIdx.x, blockDim.x and threadIdx.x, and adds that one element
// if the index is below n (the last block usually has threads to spare).
// Once it passes every case, try the faster versions: a grid-stride loop, then
// float4 loads (16 bytes per thread per load) with a separate tail for n % 4.
__global__ void vector_add_kernel(const float* a, const float* b, float* c, std::size_t n) {
    // your code here
}

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    // TODO 2: choose the number of blocks so that blocks * kThreadsPerBlock >= n
    // (round up), launch vector_add_kernel<<<blocks, kThreadsPerBlock>>>(a, b, c, n),
    // then check the launch with LABKIT_CHECK_LAUNCH().
    (void)a; (void)b; (void)c; (void)n; (void)kThreadsPerBlock;
}
