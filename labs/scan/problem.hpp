// Lab scan, CPU side: the cases and how their inputs follow from the seed (problem.cpp,
// in every lab binary), and the reference with its per-prefix rounding bound
// (reference.cpp, linked only into the trusted checker and the tests).
#pragma once

#include "labkit/problem.hpp"

namespace lab_scan {

labkit::Problem problem();

// The scans a case asks for: exact prefixes and, for floats, each prefix's bound.
std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs);

}  // namespace lab_scan
