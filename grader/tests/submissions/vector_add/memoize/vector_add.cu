// Cheat: remembers the last call's pointers and size, and skips the work when they repeat.
// Correctness cases call it once per case (so they all pass); the benchmark calls it again
// and again on the same buffers, poisoned before every sample, so the timed output is poison.
#include "labkit/check.hpp"
#include "vector_add.hpp"

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    static const float* last_a = nullptr;
    static const float* last_b = nullptr;
    static float* last_c = nullptr;
    static std::size_t last_n = 0;
    if (a == last_a && b == last_b && c == last_c && n == last_n) return;  // "already done"
    last_a = a; last_b = b; last_c = c; last_n = n;
    add<<<static_cast<unsigned>((n + 255) / 256), 256>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
}
