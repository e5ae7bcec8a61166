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

// BEGIN SOLUTION
// Each thread adds kVectorsPerThread float4 groups: all its loads are issued before the
// first add, so several 16-byte requests per thread are in flight at once.
constexpr int kVectorsPerThread = 2;

__global__ void vector_add_float4(const float4* __restrict__ a, const float4* __restrict__ b,
                                  float4* __restrict__ c, std::size_t groups) {
    const std::size_t first = (static_cast<std::size_t>(blockIdx.x) * blockDim.x * kVectorsPerThread) + threadIdx.x;
    float4 x[kVectorsPerThread], y[kVectorsPerThread];
#pragma unroll
    for (int k = 0; k < kVectorsPerThread; ++k) {
        const std::size_t g = first + static_cast<std::size_t>(k) * blockDim.x;
        if (g < groups) {
            x[k] = a[g];
            y[k] = b[g];
        }
    }
#pragma unroll
    for (int k = 0; k < kVectorsPerThread; ++k) {
        const std::size_t g = first + static_cast<std::size_t>(k) * blockDim.x;
        if (g < groups) c[g] = make_float4(x[k].x + y[k].x, x[k].y + y[k].y, x[k].z + y[k].z, x[k].w + y[k].w);
    }
}

// The last n % 4 elements (and every element when the pointers are not 16-byte
// aligned): one element per thread.
__global__ void vector_add_scalar(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, std::size_t begin, std::size_t n) {
    const std::size_t i = begin + static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

unsigned blocks_for(std::size_t items, std::size_t items_per_block) {
    return static_cast<unsigned>((items + items_per_block - 1) / items_per_block);
}
// END SOLUTION
// STARTER: // TODO 1: write the kernel. Each thread computes the index of the element it
// STARTER: // owns from blockIdx.x, blockDim.x and threadIdx.x, and adds that one element
// STARTER: // if the index is below n (the last block usually has threads to spare).
// STARTER: // Once it passes every case, try the faster versions: a grid-stride loop, then
// STARTER: // float4 loads (16 bytes per thread per load) with a separate tail for n % 4.
// STARTER: __global__ void vector_add_kernel(const float* a, const float* b, float* c, std::size_t n) {
// STARTER:     // your code here
// STARTER: }

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    // BEGIN SOLUTION
    std::size_t scalar_begin = 0;
    if (aligned16(a) && aligned16(b) && aligned16(c)) {
        const std::size_t groups = n / 4;
        if (groups > 0) {
            vector_add_float4<<<blocks_for(groups, std::size_t(kThreadsPerBlock) * kVectorsPerThread),
                                kThreadsPerBlock>>>(reinterpret_cast<const float4*>(a),
                                                    reinterpret_cast<const float4*>(b),
                                                    reinterpret_cast<float4*>(c), groups);
            LABKIT_CHECK_LAUNCH();
        }
        scalar_begin = groups * 4;
    }
    if (scalar_begin < n) {
        vector_add_scalar<<<blocks_for(n - scalar_begin, kThreadsPerBlock), kThreadsPerBlock>>>(a, b, c,
                                                                                                 scalar_begin, n);
        LABKIT_CHECK_LAUNCH();
    }
    // END SOLUTION
    // STARTER: // TODO 2: choose the number of blocks so that blocks * kThreadsPerBlock >= n
    // STARTER: // (round up), launch vector_add_kernel<<<blocks, kThreadsPerBlock>>>(a, b, c, n),
    // STARTER: // then check the launch with LABKIT_CHECK_LAUNCH().
    // STARTER: (void)a; (void)b; (void)c; (void)n; (void)kThreadsPerBlock;
}
