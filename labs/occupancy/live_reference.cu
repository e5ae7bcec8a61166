// The live case's reference (live_reference.hpp): the checker's GPU answers through the
// CUDA occupancy API, about kernels compiled from the same probes.cuh as the harness's.
#include "live_reference.hpp"

#include <string>

#include "labkit/check.hpp"
#include "labkit/checker.hpp"
#include "probes.cuh"
#include "problem.hpp"

namespace lab_occupancy {

namespace {

// The contract's requiredSM, in the form the occupancy API takes.
std::size_t contract_bytes(int block_size) { return contract_shared_memory_bytes(block_size); }

}  // namespace

std::vector<labkit::Expected> live_reference(const labkit::CaseSpec& spec,
                                             const std::vector<labkit::HostArray>& inputs) {
    try {
        labkit::require_device();
    } catch (const labkit::NoDevice& e) {
        throw labkit::ReferenceNeedsDevice(
            "case " + spec.name + " needs a GPU to be checked: its expected values come from the CUDA occupancy "
            "API of the GPU the checker runs on, and there is none here (" + e.what() +
            "). Run the checker on the machine whose GPU the lab binary ran on.");
    }
    const auto probe_list = probes();
    std::vector<int> max_threads;
    for (const auto& probe : probe_list) {
        cudaFuncAttributes attributes{};
        LABKIT_CHECK(cudaFuncGetAttributes(&attributes, probe.kernel));
        max_threads.push_back(attributes.maxThreadsPerBlock);
    }

    const labkit::HostArray& rows = inputs.at(0);
    const auto values = rows.as<std::int32_t>();
    const std::uint64_t count = rows.shape.at(0);
    labkit::Expected blocks{"live_blocks_per_sm", {count}, std::vector<double>(count), {}};
    for (std::uint64_t i = 0; i < count; ++i) {
        const LiveScenario s = live_scenario(values.subspan(i * kLiveColumns, kLiveColumns), max_threads);
        int active = 0;
        LABKIT_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &active, probe_list.at(static_cast<std::size_t>(s.probe)).kernel, s.block_size, s.dynamic_shared));
        blocks.values[i] = active;
    }

    labkit::Expected chosen{"chosen_block_size", {static_cast<std::uint64_t>(kProbeCount)},
                            std::vector<double>(kProbeCount), {}};
    for (std::size_t p = 0; p < probe_list.size(); ++p) {
        int min_grid = 0, block_size = 0;
        LABKIT_CHECK(cudaOccupancyMaxPotentialBlockSizeVariableSMem(&min_grid, &block_size, probe_list[p].kernel,
                                                                    contract_bytes));
        chosen.values[p] = largest_power_of_4_at_most(block_size);
    }
    return {std::move(blocks), std::move(chosen)};
}

std::vector<labkit::Expected> checker_reference(const labkit::CaseSpec& spec,
                                                const std::vector<labkit::HostArray>& inputs) {
    return part_of(spec) == Part::live ? live_reference(spec, inputs) : reference(spec, inputs);
}

}  // namespace lab_occupancy
