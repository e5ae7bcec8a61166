// Lab occupancy's CPU reference: linked only into the trusted checker and the tests.
// The formula's reference is CUDA's own host-side calculator, cuda_occupancy.h (header
// only, no GPU), in its default device state: no L1/shared preference, the default
// carveout, so the SM's shared memory is sharedMemPerMultiprocessor (rounded up to the
// next carveout size, which every catalogue GPU's already is). The live case's
// reference asks the GPU's occupancy API and lives in live_reference.cu.
#include <cuda_occupancy.h>

#include <stdexcept>
#include <string>

#include "labkit/matmul_reference.hpp"
#include "problem.hpp"

namespace lab_occupancy {

namespace {

cudaOccDeviceProp occupancy_device(const GpuLimits& gpu) {
    cudaOccDeviceProp p;
    p.computeMajor = gpu.cc_major;
    p.computeMinor = gpu.cc_minor;
    p.maxThreadsPerBlock = gpu.max_threads_per_block;
    p.maxThreadsPerMultiprocessor = gpu.max_threads_per_sm;
    p.regsPerBlock = gpu.regs_per_block;
    p.regsPerMultiprocessor = gpu.regs_per_sm;
    p.warpSize = gpu.warp_size;
    p.sharedMemPerBlock = gpu.shared_per_block;
    p.sharedMemPerMultiprocessor = gpu.shared_per_sm;
    p.numSms = gpu.sm_count;
    p.sharedMemPerBlockOptin = gpu.shared_per_block_optin;
    p.reservedSharedMemPerBlock = gpu.reserved_shared_per_block;
    return p;
}

// As cudaOccFuncAttributes's constructor from a cudaFuncAttributes fills it: the
// per-function opt-in limit applies, one block barrier, no partitioned global caching,
// no virtual resources.
cudaOccFuncAttributes occupancy_kernel(const KernelResources& kernel) {
    cudaOccFuncAttributes a;
    a.maxThreadsPerBlock = kernel.max_threads_per_block;
    a.numRegs = kernel.registers;
    a.sharedSizeBytes = kernel.static_shared;
    a.partitionedGCConfig = PARTITIONED_GC_OFF;
    a.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
    a.maxDynamicSharedSizeBytes = kernel.max_dynamic_shared;
    a.numBlockBarriers = 1;
    a.virtualResourceCount = 0;
    return a;
}

labkit::Expected formula_blocks_and_occupancy(const labkit::CaseSpec& spec, const labkit::HostArray& rows,
                                              labkit::Expected& occupancy) {
    const auto values = rows.as<std::int32_t>();
    const std::uint64_t count = rows.shape.at(0);
    labkit::Expected blocks{"blocks_per_sm", {count}, std::vector<double>(count), {}};
    occupancy = labkit::Expected{"occupancy", {count}, std::vector<double>(count), {}};
    for (std::uint64_t i = 0; i < count; ++i) {
        const Scenario s = formula_scenario(spec, values.subspan(i * kFormulaColumns, kFormulaColumns));
        const GpuLimits& gpu = kGpuCatalogue.at(static_cast<std::size_t>(s.gpu));
        const int active = reference_blocks_per_sm(gpu, s.kernel, s.block_size, s.dynamic_shared);
        blocks.values[i] = active;
        occupancy.values[i] = reference_occupancy(gpu, active, s.block_size);
    }
    return blocks;
}

}  // namespace

int reference_blocks_per_sm(const GpuLimits& gpu, const KernelResources& kernel, int block_size,
                            std::size_t dynamic_shared) {
    const cudaOccDeviceProp properties = occupancy_device(gpu);
    const cudaOccFuncAttributes attributes = occupancy_kernel(kernel);
    const cudaOccDeviceState state;  // the default: no cache preference, the default carveout
    cudaOccResult result{};
    const cudaOccError status =
        cudaOccMaxActiveBlocksPerMultiprocessor(&result, &properties, &attributes, &state, block_size, dynamic_shared);
    if (status != CUDA_OCC_SUCCESS)
        throw std::runtime_error(std::string("cuda_occupancy.h cannot compute the occupancy of a kernel on ") +
                                 gpu.name + " (error " + std::to_string(static_cast<int>(status)) + ")");
    return result.activeBlocksPerMultiprocessor;
}

double reference_occupancy(const GpuLimits& gpu, int active_blocks_per_sm, int block_size) {
    const int warps_per_block = (block_size + gpu.warp_size - 1) / gpu.warp_size;
    const int max_warps = gpu.max_threads_per_sm / gpu.warp_size;
    return static_cast<double>(active_blocks_per_sm * warps_per_block) / static_cast<double>(max_warps);
}

std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs) {
    switch (part_of(spec)) {
        case Part::formula: {
            labkit::Expected occupancy;
            labkit::Expected blocks = formula_blocks_and_occupancy(spec, inputs.at(0), occupancy);
            return {std::move(blocks), std::move(occupancy)};
        }
        case Part::live:
            throw std::logic_error("case " + spec.name + " asks this GPU's occupancy API for its expected values: "
                                   "the checker judges it with live_reference.cu, not with the CPU reference");
        case Part::required_shared_memory: {
            labkit::Expected smem{"smem_bytes", {static_cast<std::uint64_t>(kMaxBlockSize)},
                                  std::vector<double>(kMaxBlockSize), {}};
            for (int block_size = 1; block_size <= kMaxBlockSize; ++block_size)
                smem.values[static_cast<std::size_t>(block_size - 1)] =
                    static_cast<double>(contract_shared_memory_bytes(block_size));
            return {std::move(smem)};
        }
        case Part::matmul: {
            const auto m = static_cast<std::uint64_t>(spec.param("m"));
            const auto n = static_cast<std::uint64_t>(spec.param("n"));
            const auto k = static_cast<std::uint64_t>(spec.param("k"));
            // Each element against its bound, and the whole product against the limit that
            // tells float multiply-adds from lower precision (labkit/matmul_reference.hpp).
            labkit::Expected c = labkit::matmul_expected(
                "c", m, n, k,
                labkit::matmul_reference(inputs.at(0).as<float>().data(), inputs.at(1).as<float>().data(), m, n, k));
            if (is_bench_case(spec)) return {std::move(c)};  // a timed sample runs matmul_dynamic alone
            labkit::Expected c_fixed = c;
            c_fixed.name = "c_fixed";
            return {std::move(c), std::move(c_fixed)};
        }
    }
    throw std::logic_error("unreachable");
}

}  // namespace lab_occupancy
