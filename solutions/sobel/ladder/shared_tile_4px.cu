// Lab sobel, ladder rung: a shared-memory tile as in the rung before, but each thread
// computes 4 neighbouring pixels of a row and writes them with one 4-byte store, and the
// tile is loaded 4 bytes at a time where the image's rows are 4-byte aligned. A block of
// bx x by threads covers (4 bx) x by pixels; the 3 x 3 windows of a thread's 4 pixels
// share 6 of their 18 columns' worth of reads.
#include "v1_global.cuh"

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
        if (interior && ladder::is_edge(w[0], w[1], w[2], w[pitch], w[pitch + 2], w[2 * pitch], w[2 * pitch + 1],
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
