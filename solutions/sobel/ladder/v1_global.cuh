// Lab sobel, ladder: version 1 as every rung has it (one thread per output pixel, all nine
// neighbours read from global memory) and the lab sheet's edge test, so that the rungs
// differ in version 2 only.
#pragma once

#include <cstdint>

#include "labkit/check.hpp"
#include "sobel.hpp"

namespace ladder {

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
    std::uint8_t result = 0;
    if (x > 0 && y > 0 && x < width - 1 && y < height - 1) {
        const std::uint8_t* up = in + row - width;
        const std::uint8_t* mid = in + row;
        const std::uint8_t* down = in + row + width;
        result = is_edge(up[x - 1], up[x], up[x + 1], mid[x - 1], mid[x + 1], down[x - 1], down[x], down[x + 1],
                         threshold) ? 255 : 0;
    }
    out[row + x] = result;
}

}  // namespace ladder

void sobel_v1(const std::uint8_t* in, std::uint8_t* out, int width, int height, int threshold, dim3 block) {
    if (block.x == 0) block = dim3(32, 8);
    const dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
    ladder::sobel_global_kernel<<<grid, block>>>(in, out, width, height, threshold);
    LABKIT_CHECK_LAUNCH();
}
