// GPU tests of lab occupancy's reference against what the GPU itself says:
//   * the CPU reference (cuda_occupancy.h on the live cudaDeviceProp and each probe's
//     cudaFuncAttributes) equals cudaOccupancyMaxActiveBlocksPerMultiprocessor for every
//     probe, at every block size and many dynamic shared memory sizes, before and after
//     the probe opts in to the GPU's whole shared memory per block: the formula cases'
//     reference is what the hardware would say;
//   * where the live GPU is in the catalogue (the same compute capability and SM count),
//     its entry equals the live cudaDeviceProp in every field the formula reads.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "device_props.hpp"
#include "labkit/check.hpp"
#include "probes.cuh"
#include "problem.hpp"

namespace {

cudaDeviceProp live_prop() {
    int device = 0;
    LABKIT_CHECK(cudaGetDevice(&device));
    cudaDeviceProp prop{};
    LABKIT_CHECK(cudaGetDeviceProperties(&prop, device));
    return prop;
}

cudaFuncAttributes attributes_of(const void* kernel) {
    cudaFuncAttributes attributes{};
    LABKIT_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    return attributes;
}

// Every block size from 1 to the kernel's limit, at dynamic shared memory sizes from 0
// to the kernel's limit and one byte past it: the reference and the API agree.
void reference_agrees_with_the_api(const cudaDeviceProp& prop, const lab_occupancy::Probe& probe) {
    const cudaFuncAttributes attributes = attributes_of(probe.kernel);
    const lab_occupancy::GpuLimits gpu = lab_occupancy::from_device_prop(prop);
    const lab_occupancy::KernelResources kernel = lab_occupancy::from_func_attributes(attributes);
    const auto max_dynamic = static_cast<std::size_t>(attributes.maxDynamicSharedSizeBytes);
    const std::vector<std::size_t> dynamic_sizes = {0,          1,           1000,        8192,
                                                    20000,      32768,       max_dynamic / 3, max_dynamic / 2,
                                                    max_dynamic - 1, max_dynamic};
    int checked = 0;
    for (int block_size = 1; block_size <= attributes.maxThreadsPerBlock; ++block_size) {
        for (std::size_t dynamic : dynamic_sizes) {
            if (dynamic > max_dynamic) continue;
            int api = -1;
            LABKIT_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&api, probe.kernel, block_size, dynamic));
            const int reference = lab_occupancy::reference_blocks_per_sm(gpu, kernel, block_size, dynamic);
            if (reference != api) {
                CAPTURE(probe.name);
                CAPTURE(attributes.numRegs);
                CAPTURE(attributes.sharedSizeBytes);
                CAPTURE(block_size);
                CAPTURE(dynamic);
                CHECK(reference == api);
            }
            ++checked;
        }
    }
    CHECK(checked > 0);
}

}  // namespace

TEST_CASE("test_occupancy_reference_equals_the_occupancy_api_on_every_probe") {
    const cudaDeviceProp prop = live_prop();
    for (const auto& probe : lab_occupancy::probes()) reference_agrees_with_the_api(prop, probe);
}

TEST_CASE("test_occupancy_reference_equals_the_occupancy_api_after_opting_in") {
    const cudaDeviceProp prop = live_prop();
    for (const auto& probe : lab_occupancy::probes()) {
        const cudaFuncAttributes before = attributes_of(probe.kernel);
        const int all = static_cast<int>(prop.sharedMemPerBlockOptin - before.sharedSizeBytes);
        LABKIT_CHECK(cudaFuncSetAttribute(probe.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, all));
        CHECK(attributes_of(probe.kernel).maxDynamicSharedSizeBytes == all);
        reference_agrees_with_the_api(prop, probe);
        LABKIT_CHECK(cudaFuncSetAttribute(probe.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          before.maxDynamicSharedSizeBytes));
    }
}

TEST_CASE("test_occupancy_catalogue_entry_of_this_gpu_is_what_it_reports") {
    const cudaDeviceProp prop = live_prop();
    const lab_occupancy::GpuLimits live = lab_occupancy::from_device_prop(prop);
    const lab_occupancy::GpuLimits* entry = nullptr;
    for (const auto& gpu : lab_occupancy::kGpuCatalogue)
        if (gpu.cc_major == live.cc_major && gpu.cc_minor == live.cc_minor && gpu.sm_count == live.sm_count &&
            (entry == nullptr || std::strcmp(gpu.name, prop.name) == 0))
            entry = &gpu;
    if (entry == nullptr) {
        const std::string gpu_name = prop.name;
        const std::string why = gpu_name + " (compute capability " + std::to_string(live.cc_major) + "." +
                                std::to_string(live.cc_minor) + ", " + std::to_string(live.sm_count) +
                                " SMs) is not in the catalogue: nothing to compare";
        MESSAGE(why);
        return;
    }
    CAPTURE(entry->name);
    CAPTURE(prop.name);
    CHECK(entry->max_threads_per_block == live.max_threads_per_block);
    CHECK(entry->max_threads_per_sm == live.max_threads_per_sm);
    CHECK(entry->max_blocks_per_sm == live.max_blocks_per_sm);
    CHECK(entry->warp_size == live.warp_size);
    CHECK(entry->regs_per_sm == live.regs_per_sm);
    CHECK(entry->regs_per_block == live.regs_per_block);
    CHECK(entry->shared_per_sm == live.shared_per_sm);
    CHECK(entry->shared_per_block == live.shared_per_block);
    CHECK(entry->shared_per_block_optin == live.shared_per_block_optin);
    CHECK(entry->reserved_shared_per_block == live.reserved_shared_per_block);
}

TEST_CASE("test_occupancy_probes_differ_in_registers_and_shared_memory") {
    // The live case is only worth its name if the probes span the limits: few and many
    // registers, with and without static shared memory.
    const auto list = lab_occupancy::probes();
    const cudaFuncAttributes streaming = attributes_of(list[0].kernel), many = attributes_of(list[1].kernel),
                             shared = attributes_of(list[2].kernel), both = attributes_of(list[3].kernel);
    CHECK(many.numRegs > 2 * streaming.numRegs);
    CHECK(streaming.sharedSizeBytes == 0);
    CHECK(shared.sharedSizeBytes == 12288);
    CHECK(both.sharedSizeBytes == 4096);
    CHECK(both.numRegs > streaming.numRegs);
}
