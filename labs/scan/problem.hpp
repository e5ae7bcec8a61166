// Lab scan, CPU side: inputs from the seed and the reference with its rounding bound.
// Shared by the lab binary and the trusted checker.
#pragma once

#include "labkit/problem.hpp"

namespace lab_scan {

labkit::Problem problem();

}  // namespace lab_scan
