#include "vector_add.hpp"

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t i = blockIdx.x * blockDim.x + threadIdx.x
    if (i < n) c[i] = a[i] + b[i];
}

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    add<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
