// The student API of lab matmul. The harness calls this function; the student implements
// it in matmul.cu.
#pragma once

#include <cstddef>

// C = A * B for float matrices stored row-major: A is m x k (element (i, p) at
// a[i * k + p]), B is k x n (element (p, j) at b[p * n + j]) and C is m x n (element
// (i, j) at c[i * n + j]). Any sizes m, n, k >= 1, none of them necessarily a multiple
// of a tile. a, b and c point to device memory; c holds garbage on entry (the harness
// fills it with NaN) and every element must be overwritten. Launch on the default
// stream; do not synchronise with the host and do not allocate memory here.
void matmul(const float* a, const float* b, float* c, std::size_t m, std::size_t n, std::size_t k);
