// Fills an input array on the GPU from its description (labkit/inputs.hpp), with the
// element functions the CPU uses, so the trusted checker regenerates the same values.
#include <algorithm>

#include "labkit/check.hpp"
#include "labkit/device.hpp"
#include "labkit/generate.hpp"
#include "labkit/inputs.hpp"

namespace labkit {
namespace {

constexpr int kFillThreads = 256;

__global__ void fill_uniform_float_kernel(float* out, std::uint64_t n, std::uint64_t seed, std::uint64_t stream,
                                          double lo, double width, float hi) {
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = uniform_float_at(seed, stream, i, lo, width, hi);
}

__global__ void fill_uniform_int_kernel(std::int32_t* out, std::uint64_t n, std::uint64_t seed, std::uint64_t stream,
                                        std::int64_t lo, std::uint64_t span) {
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = uniform_int_at(seed, stream, i, lo, span);
}

__global__ void fill_uniform_u32_kernel(std::uint32_t* out, std::uint64_t n, std::uint64_t seed, std::uint64_t stream,
                                        std::uint32_t lo, std::uint64_t span) {
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = uniform_u32_at(seed, stream, i, lo, span);
}

__global__ void fill_ramp_u32_kernel(std::uint32_t* out, std::uint64_t n, std::uint32_t start, std::int64_t step) {
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = ramp_u32_at(i, start, step);
}

__global__ void fill_uniform_u8_kernel(std::uint8_t* out, std::uint64_t n, std::uint64_t seed, std::uint64_t stream,
                                       std::uint32_t lo, std::uint32_t span) {
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = uniform_u8_at(seed, stream, i, lo, span);
}

__global__ void fill_cells_u8_kernel(std::uint8_t* out, std::uint64_t n, std::uint64_t seed, std::uint64_t stream,
                                     std::uint64_t width, std::uint32_t cell, std::uint32_t noise) {
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = cells_u8_at(seed, stream, i, width, cell, noise);
}

// Rows in blockIdx.y and pixels along a row in x: no division by the width per pixel,
// and the photograph (a few hundred KiB) stays in the L2 while every row reads it.
__global__ void fill_tiled_u8_kernel(std::uint8_t* out, std::uint64_t width, std::uint64_t height, std::uint64_t seed,
                                     std::uint64_t stream, const unsigned char* source, std::uint32_t source_width,
                                     std::uint32_t source_height, TilePlacement placement, std::uint32_t noise) {
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t y = blockIdx.y; y < height; y += gridDim.y)
        for (std::uint64_t x = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; x < width; x += stride)
            out[y * width + x] = tiled_u8_at(seed, stream, source, source_width, source_height, placement, x, y, width,
                                             noise);
}

unsigned fill_blocks(std::uint64_t n) {
    const std::uint64_t wanted = (n + kFillThreads - 1) / kFillThreads;
    return static_cast<unsigned>(wanted < 65536 ? (wanted ? wanted : 1) : 65536);
}

}  // namespace

void fill_on_device(DeviceArray& array, const InputSpec& spec, std::uint64_t seed) {
    validate(spec);
    if (array.dtype() != spec.dtype || array.size() != spec.size())
        throw std::logic_error("input '" + spec.name + "' does not match the array allocated for it");
    const std::uint64_t n = spec.size();
    const Fill& f = spec.fill;
    if (n == 0) return;
    if (f.kind == Fill::Kind::uniform_float) {
        const auto hi = static_cast<float>(f.hi);
        fill_uniform_float_kernel<<<fill_blocks(n), kFillThreads>>>(array.get<float>(), n, seed, f.stream,
                                                                    static_cast<double>(static_cast<float>(f.lo)),
                                                                    static_cast<double>(hi) - static_cast<float>(f.lo), hi);
    } else if (f.kind == Fill::Kind::uniform_u32) {
        const auto lo = static_cast<std::uint32_t>(f.lo), hi = static_cast<std::uint32_t>(f.hi);
        fill_uniform_u32_kernel<<<fill_blocks(n), kFillThreads>>>(array.get<std::uint32_t>(), n, seed, f.stream, lo,
                                                                  static_cast<std::uint64_t>(hi) - lo + 1);
    } else if (f.kind == Fill::Kind::ramp_u32) {
        fill_ramp_u32_kernel<<<fill_blocks(n), kFillThreads>>>(array.get<std::uint32_t>(), n,
                                                               static_cast<std::uint32_t>(f.lo), f.step);
    } else if (f.kind == Fill::Kind::uniform_u8) {
        const auto lo = static_cast<std::uint32_t>(f.lo), hi = static_cast<std::uint32_t>(f.hi);
        fill_uniform_u8_kernel<<<fill_blocks(n), kFillThreads>>>(array.get<std::uint8_t>(), n, seed, f.stream, lo,
                                                                 hi - lo + 1);
    } else if (f.kind == Fill::Kind::cells_u8) {
        fill_cells_u8_kernel<<<fill_blocks(n), kFillThreads>>>(array.get<std::uint8_t>(), n, seed, f.stream, f.width,
                                                               f.cell, f.noise);
    } else if (f.kind == Fill::Kind::tiles_u8) {
        // Only the photograph goes to the device (never an image of the array's size from the
        // host), for the time of this fill; the copy is synchronous (pageable memory), and
        // the fill is waited for before its memory is freed. Outside any timed region.
        const std::uint64_t source_bytes = std::uint64_t(f.source_width) * f.source_height;
        DeviceBuffer source(source_bytes);
        LABKIT_CHECK(cudaMemcpy(source.data(), f.data, source_bytes, cudaMemcpyHostToDevice));
        const std::uint64_t height = n / f.width;
        const TilePlacement placement = tile_placement(seed, f.stream, f.source_width, f.source_height);
        const dim3 grid(static_cast<unsigned>(std::min<std::uint64_t>((f.width + kFillThreads - 1) / kFillThreads, 64)),
                        static_cast<unsigned>(std::min<std::uint64_t>(height, 65535)));
        fill_tiled_u8_kernel<<<grid, kFillThreads>>>(array.get<std::uint8_t>(), f.width, height, seed, f.stream,
                                                     static_cast<const unsigned char*>(source.data()), f.source_width,
                                                     f.source_height, placement, f.noise);
        LABKIT_CHECK_LAUNCH();
        LABKIT_CHECK(cudaStreamSynchronize(nullptr));
    } else if (f.kind == Fill::Kind::bytes) {
        // A dataset image: the same pixels every time (it has no seed). Pageable memory, so
        // the copy is synchronous; it is made once per input set, outside any timed region.
        LABKIT_CHECK(cudaMemcpy(array.data(), f.data, n, cudaMemcpyHostToDevice));
    } else {
        const auto lo = static_cast<std::int32_t>(f.lo), hi = static_cast<std::int32_t>(f.hi);
        fill_uniform_int_kernel<<<fill_blocks(n), kFillThreads>>>(array.get<std::int32_t>(), n, seed, f.stream, lo,
                                                                  static_cast<std::uint64_t>(std::int64_t(hi) - lo + 1));
    }
    LABKIT_CHECK_LAUNCH();
    for (const auto& [index, value] : f.fixed) {
        const std::size_t offset = static_cast<std::size_t>(index) * dtype_size(spec.dtype);
        if (spec.dtype == DType::f32) {
            const auto v = static_cast<float>(value);
            LABKIT_CHECK(cudaMemcpyAsync(static_cast<char*>(array.data()) + offset, &v, sizeof v, cudaMemcpyHostToDevice));
        } else if (spec.dtype == DType::u8) {
            const auto v = static_cast<std::uint8_t>(value);
            LABKIT_CHECK(cudaMemcpyAsync(static_cast<char*>(array.data()) + offset, &v, sizeof v, cudaMemcpyHostToDevice));
        } else if (spec.dtype == DType::u32) {
            const auto v = static_cast<std::uint32_t>(value);
            LABKIT_CHECK(cudaMemcpyAsync(static_cast<char*>(array.data()) + offset, &v, sizeof v, cudaMemcpyHostToDevice));
        } else {
            const auto v = static_cast<std::int32_t>(value);
            LABKIT_CHECK(cudaMemcpyAsync(static_cast<char*>(array.data()) + offset, &v, sizeof v, cudaMemcpyHostToDevice));
        }
    }
}

}  // namespace labkit
