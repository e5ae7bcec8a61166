// Bug: a fast, coalesced copy of in to out that forgets to transpose. out has the right
// size (rows * cols floats), and for a single row or a single column a transpose is
// exactly such a copy, so those cases pass; every other case fails at out[y=0, x=1],
// which must be in[1][0] and gets in[0][1].
#include "labkit/check.hpp"
#include "transpose.hpp"

__global__ void copy(const float* in, float* out, std::size_t n) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}

void transpose(const float* in, float* out, std::size_t rows, std::size_t cols) {
    const std::size_t n = rows * cols;
    copy<<<static_cast<unsigned>((n + 255) / 256), 256>>>(in, out, n);
    LABKIT_CHECK_LAUNCH();
}
