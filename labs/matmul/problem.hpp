// Lab matmul, CPU side: the cases and how their inputs follow from the seed (problem.cpp,
// in every lab binary), and the reference with each element's rounding bound
// (reference.cpp, linked only into the trusted checker and the tests).
#pragma once

#include <cstdint>

#include "labkit/problem.hpp"

namespace lab_matmul {

// How much of C the checker computes (reference.cpp): all of it up to this many
// multiply-adds, which every correctness case is; beyond, the bench cases (4096^3, the
// timed one, and 8192^3), kSampledLines whole rows and as many whole columns, evenly spread.
// A grade's kept timed samples are checked while its later rounds are timed, on the CPUs
// timing leaves free: all of 4096^3 took 2.5 to 7 s of a grade's wait on an H100 host, its
// 64 rows and columns (1/32 of the work) a fraction of a second, and the test of the whole
// product sees TF32 on half a million elements as well as on sixteen million.
inline constexpr std::uint64_t kFullReferenceMultiplyAdds = std::uint64_t{2048} * 2048 * 2048;
inline constexpr std::uint64_t kSampledLines = 64;

labkit::Problem problem();

// C = A*B in float64 and the bound each element of a correct float product stays within
// (labkit/matmul_reference.hpp).
std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs);

}  // namespace lab_matmul
