// Cheat: does the real (correct) work on the default stream, where the harness's CUDA
// events see it, then queues 2 ms of hidden GPU work per call on a non-blocking stream that
// the events do not wait for. The event time looks like the reference's; the wall clock
// carries every hidden millisecond, because the process waits for that stream at exit.
// It stands for any work a submission pushes outside the timed window (another stream, a
// deferred kernel) - something a process can hide from its own events, not from the clock.
#include <cstdint>
#include <cstdlib>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

cudaStream_t hidden = nullptr;

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i];
}

__device__ std::uint64_t now_ns() {
    std::uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void spin(std::uint64_t duration_ns) {
    const std::uint64_t start = now_ns();
    while (now_ns() - start < duration_ns) {
    }
}

void wait_for_hidden_work() { cudaStreamSynchronize(hidden); }

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    if (hidden == nullptr) {
        LABKIT_CHECK(cudaStreamCreateWithFlags(&hidden, cudaStreamNonBlocking));
        std::atexit(wait_for_hidden_work);
    }
    const std::size_t blocks = (n + 255) / 256;
    add<<<static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8), 256>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
    spin<<<1, 1, 0, hidden>>>(2'000'000);  // 2 ms the events never see
    LABKIT_CHECK_LAUNCH();
}
