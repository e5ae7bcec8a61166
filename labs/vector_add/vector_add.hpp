// The student API of lab vector_add. The harness calls this function; the student
// implements it in vector_add.cu.
#pragma once

#include <cstddef>

// c[i] = a[i] + b[i] for every i in [0, n).
// a, b and c are device pointers to n floats each; n is at least 1.
// Launch on the default stream. The harness synchronises and checks errors after the
// call, but your code should check its own CUDA calls too (labkit/check.hpp).
void vector_add(const float* a, const float* b, float* c, std::size_t n);
