// Lab reduction, CPU side: the cases and how their inputs follow from the seed
// (problem.cpp, in every lab binary), and the reference with its rounding bound
// (reference.cpp, linked only into the trusted checker and the tests).
#pragma once

#include "labkit/problem.hpp"

namespace lab_reduction {

labkit::Problem problem();

// The exact sum (float64, compensated) and the bound a correct float sum stays within.
std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs);

}  // namespace lab_reduction
