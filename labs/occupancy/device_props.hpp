// The catalogue's plain descriptions (problem.hpp) as the CUDA runtime's own types and
// back: the harness hands the student's code a cudaDeviceProp and a cudaFuncAttributes
// filled from a scenario, and the GPU tests compare the live GPU's properties with its
// catalogue entry. Header-only; for code that includes cuda_runtime.h anyway.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>

#include "problem.hpp"

namespace lab_occupancy {

// A cudaDeviceProp with the formula's fields from `gpu` and every other field zero, as a
// student's code would see it for that GPU (the fields it reads are those).
inline cudaDeviceProp to_device_prop(const GpuLimits& gpu) {
    cudaDeviceProp prop{};
    std::snprintf(prop.name, sizeof prop.name, "%s", gpu.name);
    prop.major = gpu.cc_major;
    prop.minor = gpu.cc_minor;
    prop.multiProcessorCount = gpu.sm_count;
    prop.maxThreadsPerBlock = gpu.max_threads_per_block;
    prop.maxThreadsPerMultiProcessor = gpu.max_threads_per_sm;
    prop.maxBlocksPerMultiProcessor = gpu.max_blocks_per_sm;
    prop.warpSize = gpu.warp_size;
    prop.regsPerMultiprocessor = gpu.regs_per_sm;
    prop.regsPerBlock = gpu.regs_per_block;
    prop.sharedMemPerMultiprocessor = gpu.shared_per_sm;
    prop.sharedMemPerBlock = gpu.shared_per_block;
    prop.sharedMemPerBlockOptin = gpu.shared_per_block_optin;
    prop.reservedSharedMemPerBlock = gpu.reserved_shared_per_block;
    prop.maxThreadsDim[0] = prop.maxThreadsDim[1] = gpu.max_threads_per_block;
    prop.maxThreadsDim[2] = 64;
    return prop;
}

// The formula's fields of a live cudaDeviceProp (name points into `prop`).
inline GpuLimits from_device_prop(const cudaDeviceProp& prop) {
    return GpuLimits{prop.name,
                     prop.major,
                     prop.minor,
                     prop.multiProcessorCount,
                     prop.maxThreadsPerBlock,
                     prop.maxThreadsPerMultiProcessor,
                     prop.maxBlocksPerMultiProcessor,
                     prop.warpSize,
                     prop.regsPerMultiprocessor,
                     prop.regsPerBlock,
                     prop.sharedMemPerMultiprocessor,
                     prop.sharedMemPerBlock,
                     prop.sharedMemPerBlockOptin,
                     prop.reservedSharedMemPerBlock};
}

// A cudaFuncAttributes with the formula's fields from `kernel`, as cudaFuncGetAttributes
// would report them for such a kernel compiled for `gpu`.
inline cudaFuncAttributes to_func_attributes(const KernelResources& kernel, const GpuLimits& gpu) {
    cudaFuncAttributes attributes{};
    attributes.numRegs = kernel.registers;
    attributes.sharedSizeBytes = kernel.static_shared;
    attributes.maxDynamicSharedSizeBytes = static_cast<int>(kernel.max_dynamic_shared);
    attributes.maxThreadsPerBlock = kernel.max_threads_per_block;
    attributes.binaryVersion = attributes.ptxVersion = 10 * gpu.cc_major + gpu.cc_minor;
    attributes.preferredShmemCarveout = -1;  // the default: no preference
    return attributes;
}

// The formula's fields of a live kernel's cudaFuncAttributes.
inline KernelResources from_func_attributes(const cudaFuncAttributes& attributes) {
    return KernelResources{attributes.numRegs, attributes.sharedSizeBytes,
                           static_cast<std::size_t>(attributes.maxDynamicSharedSizeBytes),
                           attributes.maxThreadsPerBlock};
}

}  // namespace lab_occupancy
