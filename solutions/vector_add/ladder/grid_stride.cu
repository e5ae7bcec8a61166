// vector_add ladder, rung 2: a grid-stride loop. The grid is sized to the GPU (enough
// blocks to fill every SM) rather than to n, and each thread walks the array in steps
// of the whole grid, so one launch configuration serves any n.
#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr int kThreadsPerBlock = 256;
constexpr int kBlocksPerSm = 8;  // 8 x 256 = 2048 threads: a full SM on sm_80 and newer

__global__ void vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i];
}

int sm_count() {
    static const int count = [] {
        int device = 0, sms = 0;
        LABKIT_CHECK(cudaGetDevice(&device));
        LABKIT_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        return sms;
    }();
    return count;
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t needed = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
    const std::size_t full = static_cast<std::size_t>(sm_count()) * kBlocksPerSm;
    const auto blocks = static_cast<unsigned>(needed < full ? needed : full);
    vector_add_kernel<<<blocks, kThreadsPerBlock>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
}
