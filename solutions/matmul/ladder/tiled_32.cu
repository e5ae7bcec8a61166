// matmul ladder, rung 3: the lecture's tiled kernel (tiled.cuh) with 32 x 32 tiles:
// 1024 threads per block, 8 KiB of shared memory, each float loaded from global memory
// used 32 times, half the global traffic of 16 x 16 tiles. This is the course's target:
// students are timed against this rung (lab.toml [scoring] reference).
#include "tiled.cuh"

void matmul(const float* a, const float* b, float* c, std::size_t m, std::size_t n, std::size_t k) {
    tiled::multiply<32>(a, b, c, m, n, k);
}
