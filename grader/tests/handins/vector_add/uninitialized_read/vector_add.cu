#include "vector_add.hpp"

// A scratch buffer allocated once and never written: every read of it is a read of
// uninitialised memory.
__global__ void add(const float* a, const float* b, const float* scratch, float* c, std::size_t n) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i] + 0.0f * scratch[i % 256];
}

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    static float* scratch = nullptr;
    if (scratch == nullptr) cudaMalloc(&scratch, 256 * sizeof(float));
    add<<<static_cast<unsigned>((n + 255) / 256), 256>>>(a, b, scratch, c, n);
}
