// The trusted checker, written once for every lab. It is built only from instructor
// code (labkit, the lab's problem.cpp and reference.cpp): it regenerates the inputs from
// the seed, computes the CPU reference and compares the outputs a lab binary dumped.
#pragma once

#include <stdexcept>

#include "labkit/problem.hpp"

namespace labkit {

// Thrown by a reference that needs the GPU (lab.toml [checker] gpu) where there is none:
// the checker says so and exits kExitNoDevice, like a lab binary, not "internal error".
struct ReferenceNeedsDevice : std::runtime_error {
    using std::runtime_error::runtime_error;
};

int checker_main(int argc, char** argv, const Problem& problem, const Reference& reference);

}  // namespace labkit
