// vector_add ladder, rung 1: one element per thread (lecture 1's kernel). The grid is
// rounded up to cover n, and the guard i < n idles the spare threads of the last block.
#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr int kThreadsPerBlock = 256;

__global__ void vector_add_kernel(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    const auto blocks = static_cast<unsigned>((n + kThreadsPerBlock - 1) / kThreadsPerBlock);
    vector_add_kernel<<<blocks, kThreadsPerBlock>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
}
