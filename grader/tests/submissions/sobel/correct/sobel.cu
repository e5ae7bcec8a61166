// A student's sobel: version 1 one thread per pixel from global memory; version 2 a
// shared-memory tile with its halo, 4 pixels per thread with 4-byte loads and stores.
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

}  // namespace

void sobel_v1(const std::uint8_t* in, std::uint8_t* out, int width, int height, int threshold, dim3 block) {
    if (block.x == 0) block = dim3(32, 8);
    const dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
    sobel_global_kernel<<<grid, block>>>(in, out, width, height, threshold);
    LABKIT_CHECK_LAUNCH();
}

namespace {

constexpr int kPixels = 4;

__global__ void sobel_shared4_kernel(const std::uint8_t* in, std::uint8_t* out, int width, int height, int threshold) {
    extern __shared__ __align__(4) std::uint8_t tile[];  // (by + 2) rows of (4 bx + 8) bytes
    const int pitch = kPixels * blockDim.x + 8;       // a 4-byte word of halo each side
    const int x0 = blockIdx.x * kPixels * blockDim.x - 4, y0 = blockIdx.y * blockDim.y - 1;
    const int words = (blockDim.y + 2) * (pitch / 4);
    const bool aligned = width % 4 == 0;
    for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < words; i += blockDim.x * blockDim.y) {
        const int gx = x0 + 4 * (i % (pitch / 4)), gy = y0 + i / (pitch / 4);
        unsigned word = 0;
        if (gy >= 0 && gy < height) {
            const std::uint8_t* src = in + static_cast<std::size_t>(gy) * width;
            if (aligned && gx >= 0 && gx + 4 <= width)
                word = *reinterpret_cast<const unsigned*>(src + gx);
            else
                for (int b = 0; b < 4; ++b)
                    if (gx + b >= 0 && gx + b < width) word |= static_cast<unsigned>(src[gx + b]) << (8 * b);
        }
        reinterpret_cast<unsigned*>(tile)[i] = word;
    }
    __syncthreads();
    const int x = blockIdx.x * kPixels * blockDim.x + kPixels * threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const std::uint8_t* t = tile + threadIdx.y * pitch + 4 + kPixels * threadIdx.x - 1;  // top-left of pixel 0's window
    unsigned result = 0;
    for (int k = 0; k < kPixels; ++k) {
        const int xk = x + k;
        const bool interior = xk > 0 && y > 0 && xk < width - 1 && y < height - 1;
        const std::uint8_t* w = t + k;
        if (interior && is_edge(w[0], w[1], w[2], w[pitch], w[pitch + 2], w[2 * pitch], w[2 * pitch + 1],
                                        w[2 * pitch + 2], threshold))
            result |= 0xFFu << (8 * k);
    }
    std::uint8_t* dst = out + static_cast<std::size_t>(y) * width + x;
    if (aligned && x + kPixels <= width) {
        *reinterpret_cast<unsigned*>(dst) = result;
    } else {
        for (int k = 0; k < kPixels && x + k < width; ++k) dst[k] = static_cast<std::uint8_t>(result >> (8 * k));
    }
}

}  // namespace

void sobel_v2(const std::uint8_t* in, std::uint8_t* out, int width, int height, int threshold, dim3 block) {
    if (block.x == 0) block = dim3(32, 8);
    const int pixels_across = kPixels * static_cast<int>(block.x);
    const dim3 grid((width + pixels_across - 1) / pixels_across, (height + block.y - 1) / block.y);
    sobel_shared4_kernel<<<grid, block, (block.y + 2) * (pixels_across + 8)>>>(in, out, width, height, threshold);
    LABKIT_CHECK_LAUNCH();
}
