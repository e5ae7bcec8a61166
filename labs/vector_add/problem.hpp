// Lab vector_add, CPU side: inputs from the seed and the reference. Shared by the lab
// binary and the trusted checker.
#pragma once

#include "labkit/problem.hpp"

namespace lab_vector_add {

labkit::Problem problem();

// c[i] = a[i] + b[i] in float, exactly as the GPU must compute it.
std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs);

}  // namespace lab_vector_add
