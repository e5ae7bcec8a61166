// Bug: float4 loads for n / 4 groups and nothing for the n % 4 elements after them.
#include "labkit/check.hpp"
#include "vector_add.hpp"

__global__ void add4(const float4* a, const float4* b, float4* c, std::size_t groups) {
    const std::size_t g = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (g < groups) {
        const float4 x = a[g], y = b[g];
        c[g] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t groups = n / 4;
    if (groups == 0) return;
    add4<<<static_cast<unsigned>((groups + 255) / 256), 256>>>(
        reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b),
        reinterpret_cast<float4*>(c), groups);
    LABKIT_CHECK_LAUNCH();
}
