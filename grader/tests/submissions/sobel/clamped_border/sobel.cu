// Mistake: border pixels computed with neighbours clamped to the image instead of left 0;
// version 2 is version 1.
#include <cstdint>

#include "labkit/check.hpp"
#include "sobel.hpp"

namespace {

__device__ __forceinline__ bool is_edge(int a00, int a01, int a02, int a10, int a12, int a20, int a21, int a22,
                                        int threshold) {
    const int sum1 = a02 - a00 + 2 * (a12 - a10) + a22 - a20;
    const int sum2 = a00 + 2 * a01 + a02 - a20 - 2 * a21 - a22;
    return sum1 * sum1 + sum2 * sum2 > threshold;
}

__global__ void sobel_global_kernel(const std::uint8_t* in, std::uint8_t* out, int width, int height, int threshold) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const std::size_t row = static_cast<std::size_t>(y) * width;
    // The mistake: the border is computed too, with neighbours clamped to the image, where
    // the lab sheet's loop leaves it 0.
    const auto at = [&](int yy, int xx) {
        yy = yy < 0 ? 0 : yy >= height ? height - 1 : yy;
        xx = xx < 0 ? 0 : xx >= width ? width - 1 : xx;
        return static_cast<int>(in[static_cast<std::size_t>(yy) * width + xx]);
    };
    out[row + x] = is_edge(at(y - 1, x - 1), at(y - 1, x), at(y - 1, x + 1), at(y, x - 1), at(y, x + 1),
                           at(y + 1, x - 1), at(y + 1, x), at(y + 1, x + 1), threshold) ? 255 : 0;
}

}  // namespace

void sobel_v1(const std::uint8_t* in, std::uint8_t* out, int width, int height, int threshold, dim3 block) {
    if (block.x == 0) block = dim3(32, 8);
    const dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
    sobel_global_kernel<<<grid, block>>>(in, out, width, height, threshold);
    LABKIT_CHECK_LAUNCH();
}

void sobel_v2(const std::uint8_t* in, std::uint8_t* out, int width, int height, int threshold, dim3 block) {
    sobel_v1(in, out, width, height, threshold, block);
}
