// Lab sobel, ladder rung: the lab sheet's version 2 as first written. Each block copies its
// bx x by pixels and the one-pixel halo around them into shared memory (every thread loads
// one or more of the (bx + 2) x (by + 2) values, coalesced along rows), synchronises, and
// computes one output pixel per thread from shared memory. Each input pixel now comes from
// DRAM about once, but every thread still does one 1-byte load and one 1-byte store.
#include "v1_global.cuh"

namespace {

__global__ void sobel_shared_kernel(const std::uint8_t* in, std::uint8_t* out, int width, int height, int threshold) {
    extern __shared__ std::uint8_t tile[];  // (blockDim.y + 2) rows of (blockDim.x + 2)
    const int pitch = blockDim.x + 2;
    const int x0 = blockIdx.x * blockDim.x - 1, y0 = blockIdx.y * blockDim.y - 1;  // the halo's corner
    const int count = (blockDim.y + 2) * pitch;
    for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < count; i += blockDim.x * blockDim.y) {
        const int gx = x0 + i % pitch, gy = y0 + i / pitch;
        tile[i] = gx >= 0 && gy >= 0 && gx < width && gy < height ? in[static_cast<std::size_t>(gy) * width + gx] : 0;
    }
    __syncthreads();
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const std::uint8_t* t = tile + threadIdx.y * pitch + threadIdx.x;  // the window's top-left
    const bool interior = x > 0 && y > 0 && x < width - 1 && y < height - 1;
    out[static_cast<std::size_t>(y) * width + x] =
        interior && ladder::is_edge(t[0], t[1], t[2], t[pitch], t[pitch + 2], t[2 * pitch], t[2 * pitch + 1],
                                    t[2 * pitch + 2], threshold) ? 255 : 0;
}

}  // namespace

void sobel_v2(const std::uint8_t* in, std::uint8_t* out, int width, int height, int threshold, dim3 block) {
    if (block.x == 0) block = dim3(32, 8);
    const dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
    sobel_shared_kernel<<<grid, block, (block.x + 2) * (block.y + 2)>>>(in, out, width, height, threshold);
    LABKIT_CHECK_LAUNCH();
}
