// The trusted checker, written once for every lab. It is built only from instructor
// code (labkit, the lab's problem.cpp and reference.cpp): it regenerates the inputs from
// the seed, computes the CPU reference and compares the outputs a lab binary dumped.
#pragma once

#include "labkit/problem.hpp"

namespace labkit {

int checker_main(int argc, char** argv, const Problem& problem, const Reference& reference);

}  // namespace labkit
