// Lab matmul, CPU side: the cases and how their inputs follow from the seed (problem.cpp,
// in every lab binary), and the reference with each element's rounding bound
// (reference.cpp, linked only into the trusted checker and the tests).
#pragma once

#include "labkit/problem.hpp"

namespace lab_matmul {

labkit::Problem problem();

// C = A*B in float64 and the bound each element of a correct float product stays within
// (labkit/matmul_reference.hpp).
std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs);

}  // namespace lab_matmul
