// Bug: no bounds check. The grid is rounded up to whole blocks, so the last block writes
// up to 255 floats past the end of c.
#include "labkit/check.hpp"
#include "vector_add.hpp"

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    c[i] = a[i] + b[i];
    (void)n;
}

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    add<<<static_cast<unsigned>((n + 255) / 256), 256>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
}
