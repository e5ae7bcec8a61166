// transpose ladder, rung 1: lecture 10's serial transpose. One thread (<<<1, 1>>>) walks
// the input row by row and writes each element to its place in out. Its loads follow one
// another along a row, but one thread keeps only a load or two in flight, and each store
// lands in another row of out, 4 useful bytes in a 32-byte sector: the GPU is idle but for
// one lane of one warp. The ladder runs it on square_1024 only (lab.toml says why).
#include <cstddef>

#include "labkit/check.hpp"
#include "transpose.hpp"

namespace {

__global__ void transpose_serial(const float* in, float* out, std::size_t rows, std::size_t cols) {
    for (std::size_t j = 0; j < rows; ++j)      // loop over the rows of in
        for (std::size_t i = 0; i < cols; ++i)  // loop over its columns
            out[j + i * rows] = in[i + j * cols];
}

}  // namespace

void transpose(const float* in, float* out, std::size_t rows, std::size_t cols) {
    transpose_serial<<<1, 1>>>(in, out, rows, cols);
    LABKIT_CHECK_LAUNCH();
}
