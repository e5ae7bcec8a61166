// Lab sort, CPU side: the cases and how their inputs follow from the seed (problem.cpp, in
// every lab binary), and the reference (reference.cpp, linked only into the trusted checker
// and the tests).
#pragma once

#include "labkit/problem.hpp"

namespace lab_sort {

labkit::Problem problem();

// The stable sort of the case's keys (output "keys") and, for a pairs case, of its
// key/value pairs ("pair_keys", "pair_values"), exactly.
std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs);

}  // namespace lab_sort
