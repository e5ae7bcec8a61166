// Cheat: slow, correct work, skipped whenever a call looks like the last one. The kernel
// is deliberately slow: each thread adds whole chunks of 256 consecutive elements, so at
// every step the 32 threads of a warp touch 32 different cache lines (no coalescing), and
// the grid is only 32 blocks (on an H100 at n = 2^26: about 4 ms a call, against 0.3 ms
// for a plain grid-stride loop and 0.27 ms for the reference). On top of that it
// remembers the last call's (a, b, c, n) and returns at once, doing nothing, when they
// repeat: the classic memoisation that made a benchmark of repeated calls on the same
// buffers time nothing at all.
//
// What the grader must do: give every timed call fresh input contents and a poisoned
// output, and check the outputs of calls it picks at random. The correctness cases call
// it once each with a different n, so they all pass; in the timed runs the skipped calls
// leave poison behind, the checked output is wrong, and performance is zero (and the calls
// that do run are the slow kernel, far past the zero-marks ratio anyway).
#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr unsigned kSlowBlocks = 32;
constexpr unsigned kThreadsPerBlock = 256;
constexpr std::size_t kChunk = 256;

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

struct Call {
    const float* a = nullptr;
    const float* b = nullptr;
    float* c = nullptr;
    std::size_t n = 0;

    bool operator==(const Call&) const = default;
};

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    static Call last;
    const Call call{a, b, c, n};
    if (call == last) return;  // "already computed"
    last = call;
    add_slowly<<<kSlowBlocks, kThreadsPerBlock>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
}
