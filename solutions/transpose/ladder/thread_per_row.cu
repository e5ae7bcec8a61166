// transpose ladder, rung 2: lecture 10's one thread per row (of out). Thread i copies
// column i of in into row i of out, looping down the rows. The 32 threads of a warp read
// 32 neighbouring columns of one row of in, 128 contiguous bytes (coalesced: 100 % load
// efficiency), but write 32 different rows of out, one 4-byte element in each 32-byte
// sector (12.5 % store efficiency). The lecture launches <<<1, N>>> with N = 1024; here
// that is blocks of 1024 threads, as many as the columns need, so only cols / 1024 SMs
// have work.
#include <cstddef>

#include "labkit/check.hpp"
#include "transpose.hpp"

namespace {

constexpr unsigned kThreadsPerBlock = 1024;

__global__ void transpose_thread_per_row(const float* in, float* out, std::size_t rows, std::size_t cols) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kThreadsPerBlock + threadIdx.x;
    if (i >= cols) return;  // the last block's threads past the last column
    for (std::size_t j = 0; j < rows; ++j)  // loop over the rows of in
        out[j + i * rows] = in[i + j * cols];
}

}  // namespace

void transpose(const float* in, float* out, std::size_t rows, std::size_t cols) {
    const std::size_t blocks = (cols + kThreadsPerBlock - 1) / kThreadsPerBlock;
    transpose_thread_per_row<<<static_cast<unsigned>(blocks), kThreadsPerBlock>>>(in, out, rows, cols);
    LABKIT_CHECK_LAUNCH();
}
