// Cheat: slow, correct work, replaced by a copy of the last answer whenever the inputs
// look the same, decided on the GPU so that no call ever waits for the host. Each call
// launches three kernels on the default stream:
//   1. compare: one warp reads 16 values of a and 16 of b at evenly spread indices,
//      compares them with the 32 it stored last time (bit for bit), stores the new ones,
//      and sets a device flag "same";
//   2. copy: when the flag says "same", copies the saved last output into c;
//   3. the deliberately slow kernel (32 blocks, each thread through 256 consecutive
//      elements, no coalescing), which returns at once when the flag says "same", and
//      otherwise computes c and saves a copy of it.
// A change of pointers or n, or a new save buffer, forces "not same" from the host.
//
// What the grader must do: fill the inputs with fresh random values before every timed
// call. Then "same" never happens, every call pays for the slow kernel, the output is
// right (correctness full) and the time is far past the zero-marks ratio (performance
// zero). A benchmark that reused the same inputs would time the copy and pay it.
#include <cstdint>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr unsigned kSlowBlocks = 32;
constexpr unsigned kThreadsPerBlock = 256;
constexpr std::size_t kChunk = 256;
constexpr int kSamplesPerInput = 16;
constexpr unsigned kFullWarp = 0xffffffffu;

__device__ float stored_samples[2 * kSamplesPerInput];
__device__ int inputs_same_as_last_call;

__device__ std::size_t sample_index(int s, std::size_t n) {
    return (n - 1) * static_cast<std::size_t>(s) / (kSamplesPerInput - 1);
}

// One warp: lanes 0-15 sample a, lanes 16-31 sample b.
__global__ void compare_samples(const float* a, const float* b, std::size_t n, bool force_different) {
    const int lane = static_cast<int>(threadIdx.x);
    const std::size_t k = sample_index(lane % kSamplesPerInput, n);
    const float now = lane < kSamplesPerInput ? a[k] : b[k];
    const bool same = !force_different && __float_as_uint(now) == __float_as_uint(stored_samples[lane]);
    const bool all_same = __all_sync(kFullWarp, same);
    stored_samples[lane] = now;
    if (lane == 0) inputs_same_as_last_call = all_same;
}

__global__ void copy_if_same(const float* saved, float* c, std::size_t n) {
    if (!inputs_same_as_last_call) return;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = saved[i];
}

// Slow by construction: 32 blocks of 256 threads, each thread one element at a time through
// 256 consecutive elements (a warp's 32 loads hit 32 cache lines), the inner loop kept
// rolled and no __restrict__, so each thread has one element in flight and waits for it.
__global__ void add_slowly_unless_same(const float* a, const float* b, float* c, float* saved, std::size_t n) {
    if (inputs_same_as_last_call) return;
    const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t chunk = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; chunk * kChunk < n;
         chunk += threads) {
        const std::size_t end = chunk * kChunk + kChunk < n ? chunk * kChunk + kChunk : n;
#pragma unroll 1
        for (std::size_t i = chunk * kChunk; i < end; ++i) {
            const float sum = a[i] + b[i];
            c[i] = sum;
            saved[i] = sum;
        }
    }
}

struct Cache {
    const float* a = nullptr;
    const float* b = nullptr;
    float* c = nullptr;
    std::size_t n = 0;
    float* saved_output = nullptr;
    std::size_t saved_capacity = 0;
};

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    static Cache cache;
    bool force_different = a != cache.a || b != cache.b || c != cache.c || n != cache.n;
    if (cache.saved_capacity < n) {
        LABKIT_CHECK(cudaFree(cache.saved_output));
        cache.saved_output = nullptr;
        LABKIT_CHECK(cudaMalloc(&cache.saved_output, n * sizeof(float)));
        cache.saved_capacity = n;
        force_different = true;
    }
    cache.a = a;
    cache.b = b;
    cache.c = c;
    cache.n = n;

    compare_samples<<<1, 2 * kSamplesPerInput>>>(a, b, n, force_different);
    LABKIT_CHECK_LAUNCH();
    const std::size_t copy_blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
    copy_if_same<<<static_cast<unsigned>(copy_blocks < 65535 * 8 ? copy_blocks : 65535 * 8), kThreadsPerBlock>>>(
        cache.saved_output, c, n);
    LABKIT_CHECK_LAUNCH();
    add_slowly_unless_same<<<kSlowBlocks, kThreadsPerBlock>>>(a, b, c, cache.saved_output, n);
    LABKIT_CHECK_LAUNCH();
}
