// Lab vector_add, CPU side: the cases and how their inputs follow from the seed
// (problem.cpp, in every lab binary), and the reference (reference.cpp, linked only into
// the trusted checker and the tests).
#pragma once

#include "labkit/problem.hpp"

namespace lab_vector_add {

labkit::Problem problem();

// c[i] = a[i] + b[i] in float, exactly as the GPU must compute it.
std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs);

}  // namespace lab_vector_add
