// Bug: the grid-stride loop steps by threadIdx.x instead of the grid size, so thread 0
// (step 0) never advances and the kernel never returns.
#include "labkit/check.hpp"
#include "vector_add.hpp"

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += threadIdx.x)
        c[i] = a[i] + b[i];
}

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    add<<<static_cast<unsigned>((n + 255) / 256), 256>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
}
