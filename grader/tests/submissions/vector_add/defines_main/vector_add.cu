// Attack: bring its own main(). vector_add is correct, but the file also defines main(),
// which prints "all passed" and exits 0 without running a single case. If the program
// were linked with this main instead of the harness's (the harness's main lives in a
// static library, which a linker only searches for symbols still undefined), the run
// would "pass" with nothing checked.
//
// What the grader must do: refuse any submission that defines main() (or any other
// harness symbol) before it links, and say so. The grade is compile_error, with a
// message naming main(), so the student learns the harness provides it.
#include <cstdio>

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

int main() {
    std::puts("all passed");
    return 0;
}
