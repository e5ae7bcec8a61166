// Control: a plain, correct transpose. Everything else in this folder is graded against
// what this one gets.
//
// One 32 x 32 tile per block of 32 x 8 threads, each thread moving 4 rows of it, through
// a padded shared-memory tile; every load and store checked against rows and cols. A
// grid is at most 65535 blocks tall, so taller matrices loop over rows of tiles.
#include "labkit/check.hpp"
#include "transpose.hpp"

namespace {

constexpr unsigned kTile = 32;
constexpr unsigned kRows = 8;

__global__ void transpose_tiles(const float* in, float* out, std::size_t rows, std::size_t cols,
                                std::size_t tiles_down) {
    __shared__ float tile[kTile][kTile + 1];
    const std::size_t col0 = static_cast<std::size_t>(blockIdx.x) * kTile;
    for (std::size_t t = blockIdx.y; t < tiles_down; t += gridDim.y) {
        const std::size_t row0 = t * kTile;
        for (unsigned k = threadIdx.y; k < kTile; k += kRows)
            if (row0 + k < rows && col0 + threadIdx.x < cols)
                tile[k][threadIdx.x] = in[(row0 + k) * cols + col0 + threadIdx.x];
        __syncthreads();
        for (unsigned k = threadIdx.y; k < kTile; k += kRows)
            if (col0 + k < cols && row0 + threadIdx.x < rows)
                out[(col0 + k) * rows + row0 + threadIdx.x] = tile[threadIdx.x][k];
        __syncthreads();
    }
}

}  // namespace

void transpose(const float* in, float* out, std::size_t rows, std::size_t cols) {
    const std::size_t across = (cols + kTile - 1) / kTile, down = (rows + kTile - 1) / kTile;
    const dim3 grid(static_cast<unsigned>(across), static_cast<unsigned>(down < 65535 ? down : 65535));
    transpose_tiles<<<grid, dim3(kTile, kRows)>>>(in, out, rows, cols, down);
    LABKIT_CHECK_LAUNCH();
}
