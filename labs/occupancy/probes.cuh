// The live case's probe kernels: four kernels with different register pressure and
// static shared memory, whose occupancy a student's formula computes from their
// cudaFuncAttributes on the live GPU. They are never launched, only asked about.
//
// Compiled into the harness (which hands their attributes to the student's code) and,
// from this same source with the same flags, into the trusted checker (which asks the
// CUDA occupancy API about its own copies) and the GPU tests, so that every copy has the
// same registers and shared memory. Each file that includes this gets copies of its own
// (an unnamed namespace), so no two objects define the same kernel.
#pragma once

#include <cuda_runtime.h>

#include <array>

namespace lab_occupancy {
namespace {

// Few registers and no shared memory: y = 2x + y over a grid-stride loop.
__global__ void probe_streaming(const float* __restrict__ x, float* __restrict__ y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2.0f * x[i] + y[i];
}

// Many registers: 64 running values per thread, all of them live across the loop, so
// the compiler keeps them in registers. Fewer of its threads fit in the register file,
// and the occupancy API's best block size for it is smaller.
constexpr int kManyValues = 64;
__global__ void probe_many_registers(const float* __restrict__ x, float* __restrict__ y, int n) {
    float v[kManyValues];
#pragma unroll
    for (int j = 0; j < kManyValues; ++j) v[j] = static_cast<float>(j) + static_cast<float>(threadIdx.x);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float xi = x[i];
#pragma unroll
        for (int j = 0; j < kManyValues; ++j) v[j] = fmaf(v[j], xi, v[(j + 7) % kManyValues]);
    }
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kManyValues; ++j) sum = fmaf(v[j], static_cast<float>(j + 1), sum);
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) y[t] = sum;
}

// 12 KiB of static shared memory and few registers: each block reverses a tile of 3072
// floats through shared memory.
constexpr int kStaticTile = 3072;
__global__ void probe_static_shared(const float* __restrict__ x, float* __restrict__ y, int n) {
    __shared__ float tile[kStaticTile];
    const int first = blockIdx.x * kStaticTile;
    for (int j = threadIdx.x; j < kStaticTile; j += blockDim.x) tile[j] = first + j < n ? x[first + j] : 0.0f;
    __syncthreads();
    for (int j = threadIdx.x; j < kStaticTile; j += blockDim.x)
        if (first + j < n) y[first + j] = tile[kStaticTile - 1 - j];
}

// Both: 4 KiB of static shared memory and 32 running values per thread.
constexpr int kMixedTile = 1024;
constexpr int kMixedValues = 32;
__global__ void probe_shared_and_registers(const float* __restrict__ x, float* __restrict__ y, int n) {
    __shared__ float tile[kMixedTile];
    for (int j = threadIdx.x; j < kMixedTile; j += blockDim.x) tile[j] = j < n ? x[j] : 0.0f;
    __syncthreads();
    float v[kMixedValues];
#pragma unroll
    for (int j = 0; j < kMixedValues; ++j) v[j] = tile[(threadIdx.x + 31 * j) % kMixedTile];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float xi = x[i];
#pragma unroll
        for (int j = 0; j < kMixedValues; ++j) v[j] = fmaf(v[j], xi, v[(j + 3) % kMixedValues]);
    }
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kMixedValues; ++j) sum += v[j];
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) y[t] = sum;
}

struct Probe {
    const char* name;
    const void* kernel;  // what cudaFuncGetAttributes and the occupancy API take
};

constexpr int kProbeCount = 4;

// The probes in the order the live case numbers them.
inline std::array<Probe, kProbeCount> probes() {
    return {{{"probe_streaming", reinterpret_cast<const void*>(&probe_streaming)},
             {"probe_many_registers", reinterpret_cast<const void*>(&probe_many_registers)},
             {"probe_static_shared", reinterpret_cast<const void*>(&probe_static_shared)},
             {"probe_shared_and_registers", reinterpret_cast<const void*>(&probe_shared_and_registers)}}};
}

}  // namespace
}  // namespace lab_occupancy
