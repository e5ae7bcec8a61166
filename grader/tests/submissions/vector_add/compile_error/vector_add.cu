// Bug: a missing semicolon and an undeclared name: the compiler's first lines about this
// file are the feedback.
#include "vector_add.hpp"

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t i = blockIdx.x * blockDim.x + threadIdx.x
    if (i < n) c[i] = a[i] + b[i];
}

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    add<<<blocks, 256>>>(a, b, c, n);
}
