// Cheat: slow, correct work, replaced by a copy of the last answer whenever the inputs
// look the same. Before each call it gathers 16 values of a and 16 of b, at evenly spread
// indices, and copies them to the host. If the pointers, n and those 32 values equal the
// last call's, it copies the output it saved last time into c (device to device, about as
// fast as the reference) instead of computing; otherwise it runs a deliberately slow kernel
// (32 blocks, each thread through 256 consecutive elements, no coalescing) and saves a copy
// of c. Sampling is the cheap trick that beats a memoiser keyed on pointers: it notices
// new contents in the same buffers, here 16 points at a time.
//
// What the grader must do: fill the inputs with fresh random values before every timed
// call. Then the samples never match, every call is the slow kernel, its output is right
// (correctness full), and its time is far past the zero-marks ratio (performance zero).
// A benchmark that reused the same inputs would time the copy and pay it full marks.
#include <array>
#include <cstring>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr unsigned kSlowBlocks = 32;
constexpr unsigned kThreadsPerBlock = 256;
constexpr std::size_t kChunk = 256;
constexpr int kSamplesPerInput = 16;

// Slow by construction: 32 blocks of 256 threads, each thread one element at a time through
// 256 consecutive elements (a warp's 32 loads hit 32 cache lines), the inner loop kept
// rolled and no __restrict__ (c may alias a or b as far as the compiler knows), so each
// thread has one element in flight and waits for it.
__global__ void add_slowly(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t chunk = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; chunk * kChunk < n;
         chunk += threads) {
        const std::size_t end = chunk * kChunk + kChunk < n ? chunk * kChunk + kChunk : n;
#pragma unroll 1
        for (std::size_t i = chunk * kChunk; i < end; ++i) c[i] = a[i] + b[i];
    }
}

// Sample s of an input of n elements: evenly spread from the first element to the last.
__host__ __device__ std::size_t sample_index(int s, std::size_t n) {
    return (n - 1) * static_cast<std::size_t>(s) / (kSamplesPerInput - 1);
}

// samples[0..15] from a, samples[16..31] from b. One warp.
__global__ void gather_samples(const float* a, const float* b, std::size_t n, float* samples) {
    const int lane = static_cast<int>(threadIdx.x);
    const int s = lane % kSamplesPerInput;
    samples[lane] = lane < kSamplesPerInput ? a[sample_index(s, n)] : b[sample_index(s, n)];
}

using Samples = std::array<float, 2 * kSamplesPerInput>;

struct Cache {
    const float* a = nullptr;
    const float* b = nullptr;
    float* c = nullptr;
    std::size_t n = 0;
    Samples samples{};
    float* saved_output = nullptr;  // device copy of the last output
    std::size_t saved_capacity = 0;
    float* device_samples = nullptr;

    bool matches(const float* a_now, const float* b_now, const float* c_now, std::size_t n_now,
                 const Samples& now) const {
        return saved_output != nullptr && a == a_now && b == b_now && c == c_now && n == n_now &&
               std::memcmp(samples.data(), now.data(), sizeof now) == 0;  // bits, so NaN == NaN
    }
};

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    static Cache cache;
    if (cache.device_samples == nullptr) LABKIT_CHECK(cudaMalloc(&cache.device_samples, sizeof(Samples)));

    Samples now{};
    gather_samples<<<1, 2 * kSamplesPerInput>>>(a, b, n, cache.device_samples);
    LABKIT_CHECK_LAUNCH();
    LABKIT_CHECK(cudaMemcpy(now.data(), cache.device_samples, sizeof now, cudaMemcpyDeviceToHost));
    if (cache.matches(a, b, c, n, now)) {  // "same inputs as last time": replay the answer
        LABKIT_CHECK(cudaMemcpyAsync(c, cache.saved_output, n * sizeof(float), cudaMemcpyDeviceToDevice));
        return;
    }

    add_slowly<<<kSlowBlocks, kThreadsPerBlock>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
    if (cache.saved_capacity < n) {
        LABKIT_CHECK(cudaFree(cache.saved_output));
        cache.saved_output = nullptr;
        LABKIT_CHECK(cudaMalloc(&cache.saved_output, n * sizeof(float)));
        cache.saved_capacity = n;
    }
    LABKIT_CHECK(cudaMemcpyAsync(cache.saved_output, c, n * sizeof(float), cudaMemcpyDeviceToDevice));
    cache.a = a;
    cache.b = b;
    cache.c = c;
    cache.n = n;
    cache.samples = now;
}
