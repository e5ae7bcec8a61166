// Lab transpose, CPU side: the cases and how their inputs follow from the seed
// (problem.cpp, in every lab binary), and the reference (reference.cpp, linked only into
// the trusted checker and the tests).
#pragma once

#include "labkit/problem.hpp"

namespace lab_transpose {

labkit::Problem problem();

// out = in^T: the cols x rows matrix with out[c][r] = in[r][c], exactly.
std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs);

}  // namespace lab_transpose
