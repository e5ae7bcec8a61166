// A student's file that keeps to the rules: the API, helpers of its own (static, in an
// anonymous namespace, or plain global functions and variables), kernels, and the same
// inline functions and std::vector<float> code the official objects also emit.
#include <cstdint>

#include "fake_labkit.hpp"
#include "labkit/check.hpp"

template class std::vector<float>;  // the harness emits the same weak copies

int launches = 0;  // a global variable of the student's own

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

static unsigned blocks_for(std::size_t n) { return static_cast<unsigned>((n + 255) / 256); }

namespace {

__global__ void add_one(const float* a, float* out, std::size_t n) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + 1.0f;
}

}  // namespace

template <typename T>
__global__ void scale(T* out, std::size_t n, T by) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] *= by;
}

__global__ void global_kernel(float* out) { out[threadIdx.x] = 0.0f; }

std::size_t toy_workspace_bytes(std::size_t n) {
    std::vector<float> sizes;
    sizes.push_back(static_cast<float>(n));
    ++labkit::calls();
    return static_cast<std::size_t>(labkit::count_positive(sizes)) * 16;
}

void toy_add(const float* a, float* out, std::size_t n) {
    add_one<<<blocks_for(n), 256>>>(a, out, n);
    LABKIT_CHECK_LAUNCH();
    if (aligned16(out)) scale<float><<<blocks_for(n), 256>>>(out, n, 2.0f);
    global_kernel<<<1, 1>>>(out);
    LABKIT_CHECK(cudaGetLastError());
    ++launches;
}
