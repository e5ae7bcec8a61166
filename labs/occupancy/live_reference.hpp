// The live case's reference, in the trusted checker only: the CUDA occupancy API of the
// checker's own GPU, asked about the checker's own copies of the probe kernels
// (probes.cuh), so that nothing the student's process says goes into the expected values.
#pragma once

#include <vector>

#include "labkit/problem.hpp"

namespace lab_occupancy {

// live_blocks_per_sm from cudaOccupancyMaxActiveBlocksPerMultiprocessor for every
// scenario of the case, and chosen_block_size from
// cudaOccupancyMaxPotentialBlockSizeVariableSMem with the contract's
// 2 * block_size * sizeof(float) bytes of dynamic shared memory, rounded down to a power
// of 4, for every probe. Throws labkit::NoDevice, with a sentence saying so, where there
// is no usable GPU.
std::vector<labkit::Expected> live_reference(const labkit::CaseSpec& spec,
                                             const std::vector<labkit::HostArray>& inputs);

// The checker's reference: live_reference for the live case, the CPU reference
// (reference.cpp) for every other case.
std::vector<labkit::Expected> checker_reference(const labkit::CaseSpec& spec,
                                                const std::vector<labkit::HostArray>& inputs);

}  // namespace lab_occupancy
