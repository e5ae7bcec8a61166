// Attack: redefine a CUDA runtime function the harness times with. vector_add is correct,
// but the file also defines cudaEventElapsedTime, with the runtime's own C signature from
// cuda_runtime_api.h, to report 0.001 ms for every interval. The CUDA runtime is linked
// statically (libcudart_static.a), so whether the linker keeps this definition, reports a
// duplicate, or takes the runtime's depends on which archive members get pulled in: a
// program whose own clock can be forged this way must not be graded.
//
// What the grader must do: refuse a submission that defines any symbol besides the lab's
// API (here a CUDA runtime function), before it links, naming the symbol. The grade is
// compile_error. (The new grader's timing comes from its own clock anyway, so even a
// successful override would not buy performance points.)
#include "labkit/check.hpp"
#include "vector_add.hpp"

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i];
}

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t blocks = (n + 255) / 256;
    add<<<static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8), 256>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
}

// The declaration in cuda_runtime_api.h (CUDA 13) is
//   extern __host__ cudaError_t CUDARTAPI cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
// inside an extern "C" block; this definition matches it exactly.
extern "C" __host__ cudaError_t CUDARTAPI cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
    (void)start;
    (void)end;
    if (ms == nullptr) return cudaErrorInvalidValue;
    *ms = 0.001f;
    return cudaSuccess;
}
