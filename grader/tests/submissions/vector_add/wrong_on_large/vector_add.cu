// Bug: caps the grid at 65535 blocks (the gridDim.y limit, mistaken for gridDim.x's) and
// has no grid-stride loop, so at most 65535 * 256 = 16,776,960 elements are covered.
#include "labkit/check.hpp"
#include "vector_add.hpp"

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    std::size_t blocks = (n + 255) / 256;
    if (blocks > 65535) blocks = 65535;
    add<<<static_cast<unsigned>(blocks), 256>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
}
