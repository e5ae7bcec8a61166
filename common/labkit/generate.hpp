// Seeded input generators. Every element is a pure function of (seed, stream, index),
// computed by the same inline code on the host and on the device, so the harness fills
// its inputs on the GPU (a fresh set for every timed sample, outside the timed region)
// while the trusted checker regenerates identical values on the CPU; any element can be
// produced without its predecessors, and large arrays are filled on all cores.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#if defined(__CUDACC__)
#define LABKIT_HOST_DEVICE __host__ __device__
#else
#define LABKIT_HOST_DEVICE
#endif

namespace labkit {

// SplitMix64's finaliser: a fast, well-mixed 64-bit hash.
LABKIT_HOST_DEVICE constexpr std::uint64_t mix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// The 64 random bits of element `index` of stream `stream` under `seed`.
LABKIT_HOST_DEVICE constexpr std::uint64_t random_bits(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
    return mix64(mix64(seed ^ mix64(stream + 0x632BE59BD9B4E019ull)) + index);
}

// A uniform double in [0, 1) with 53 random bits.
LABKIT_HOST_DEVICE constexpr double random_unit(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
    return static_cast<double>(random_bits(seed, stream, index) >> 11) * 0x1.0p-53;
}

// The seed of timed sample `sample` of a run seeded with `seed`, when the program picks
// its own per-sample seeds (a student's or the ladder's --bench; graded runs get each
// sample's seed from the grader instead).
LABKIT_HOST_DEVICE constexpr std::uint64_t sample_seed(std::uint64_t seed, std::uint64_t sample) {
    return mix64(seed ^ mix64(sample + 0xD1B54A32D192ED03ull));
}

// Element `index` of a uniform float stream in [lo, hi). The arithmetic is written out
// with explicit rounding so that nvcc cannot contract it into a fused multiply-add: the
// device must produce the host's value bit for bit.
LABKIT_HOST_DEVICE inline float uniform_float_at(std::uint64_t seed, std::uint64_t stream, std::uint64_t index,
                                                 double lo, double width, float hi) {
    const double u = random_unit(seed, stream, index);
#if defined(__CUDA_ARCH__)
    const float v = __double2float_rn(__dadd_rn(lo, __dmul_rn(width, u)));
    return v < hi ? v : nextafterf(hi, static_cast<float>(lo));  // rounding may reach hi
#else
    const double scaled = width * u;  // host code is compiled without contraction (-std=c++20)
    const float v = static_cast<float>(lo + scaled);
    return v < hi ? v : __builtin_nextafterf(hi, static_cast<float>(lo));
#endif
}

// Element `index` of a uniform integer stream in [lo, lo + span - 1].
LABKIT_HOST_DEVICE constexpr std::int32_t uniform_int_at(std::uint64_t seed, std::uint64_t stream,
                                                         std::uint64_t index, std::int64_t lo, std::uint64_t span) {
    return static_cast<std::int32_t>(lo + static_cast<std::int64_t>(random_bits(seed, stream, index) % span));
}

// Element `index` of a uniform unsigned stream in [lo, lo + span - 1] (span up to 2^32).
LABKIT_HOST_DEVICE constexpr std::uint32_t uniform_u32_at(std::uint64_t seed, std::uint64_t stream,
                                                          std::uint64_t index, std::uint32_t lo, std::uint64_t span) {
    return static_cast<std::uint32_t>(lo + random_bits(seed, stream, index) % span);
}

// Element `index` of the ramp start, start + step, start + 2 * step, ... modulo 2^32.
LABKIT_HOST_DEVICE constexpr std::uint32_t ramp_u32_at(std::uint64_t index, std::uint32_t start, std::int64_t step) {
    return static_cast<std::uint32_t>(start + index * static_cast<std::uint64_t>(step));
}

// Element `index` of a uniform 8-bit stream in [lo, lo + span - 1] (span up to 256).
LABKIT_HOST_DEVICE constexpr std::uint8_t uniform_u8_at(std::uint64_t seed, std::uint64_t stream, std::uint64_t index,
                                                        std::uint32_t lo, std::uint32_t span) {
    return static_cast<std::uint8_t>(lo + random_bits(seed, stream, index) % span);
}

// Pixel `index` of a synthetic gray image `width` pixels wide: flat `cell` x `cell` cells,
// each a random gray level (so every cell border with a large enough step is an edge),
// plus per-pixel noise uniform in [-noise, noise], clamped to [0, 255].
LABKIT_HOST_DEVICE constexpr std::uint8_t cells_u8_at(std::uint64_t seed, std::uint64_t stream, std::uint64_t index,
                                                      std::uint64_t width, std::uint32_t cell, std::uint32_t noise) {
    const std::uint64_t x = index % width, y = index / width;
    const std::uint64_t cell_key = ((y / cell) << 32) ^ (x / cell);
    const std::int64_t base = static_cast<std::int64_t>(random_bits(seed, stream, cell_key) & 0xFF);
    const std::int64_t jitter =
        static_cast<std::int64_t>(random_bits(seed, stream + 1, index) % (2 * std::uint64_t(noise) + 1)) - noise;
    const std::int64_t v = base + jitter;
    return static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// Where one input set puts a photograph it tiles over an image (tiled_u8_at): turned a
// quarter (transposed) or not, and shifted by (offset_x, offset_y) within the period of
// the mirrored tiling, so that every seed shows the picture at a place of its own. Flips
// are not drawn: a mirrored tiling already holds every flipped copy, one shift away.
struct TilePlacement {
    bool transposed = false;
    std::uint64_t offset_x = 0, offset_y = 0;
};

// The placement that `seed` draws on stream `stream` for a photograph of
// source_width x source_height pixels (each 1 or more): computed once per input set, by the
// CPU and by the GPU's fill alike.
LABKIT_HOST_DEVICE constexpr TilePlacement tile_placement(std::uint64_t seed, std::uint64_t stream,
                                                          std::uint32_t source_width, std::uint32_t source_height) {
    const bool transposed = (random_bits(seed, stream, 0) & 1) != 0;
    const std::uint64_t across = transposed ? source_height : source_width;  // the turned picture's width
    const std::uint64_t down = transposed ? source_width : source_height;
    return {transposed, random_bits(seed, stream, 1) % (2 * across), random_bits(seed, stream, 2) % (2 * down)};
}

// Coordinate `c` of a picture `n` pixels long (n >= 1) repeated with every other copy
// mirrored: 0, 1, ..., n - 1, n - 1, ..., 1, 0, 0, 1, ... (neighbouring copies meet without
// a seam). 32-bit arithmetic where the numbers fit: the same result, cheaper on the GPU.
LABKIT_HOST_DEVICE constexpr std::uint64_t mirrored(std::uint64_t c, std::uint64_t n) {
    const std::uint64_t period = 2 * n;
    const std::uint64_t u = ((c | period) >> 32) == 0
                                ? static_cast<std::uint32_t>(c) % static_cast<std::uint32_t>(period)
                                : c % period;
    return u < n ? u : period - 1 - u;
}

// Pixel (x, y) of an image `width` pixels wide covered by a photograph (`source`,
// source_width x source_height gray levels, rows top to bottom) tiled with mirrored copies,
// turned and shifted by `placement`, plus per-pixel noise uniform in [-noise, noise],
// clamped to [0, 255]: a picture as large as the image with a photograph's edges and
// textures everywhere, and pixels of its own for every seed.
LABKIT_HOST_DEVICE constexpr std::uint8_t tiled_u8_at(std::uint64_t seed, std::uint64_t stream,
                                                      const unsigned char* source, std::uint32_t source_width,
                                                      std::uint32_t source_height, TilePlacement placement,
                                                      std::uint64_t x, std::uint64_t y, std::uint64_t width,
                                                      std::uint32_t noise) {
    const std::uint64_t across = placement.transposed ? source_height : source_width;
    const std::uint64_t down = placement.transposed ? source_width : source_height;
    const std::uint64_t u = mirrored(x + placement.offset_x, across), v = mirrored(y + placement.offset_y, down);
    const std::uint64_t source_x = placement.transposed ? v : u, source_y = placement.transposed ? u : v;
    const std::int64_t base = source[source_y * source_width + source_x];
    // The top 32 random bits scaled to [0, 2 noise]: no division.
    const std::uint64_t bits = random_bits(seed, stream + 1, y * width + x) >> 32;
    const std::int64_t jitter = static_cast<std::int64_t>((bits * (2 * std::uint64_t(noise) + 1)) >> 32) - noise;
    const std::int64_t value = base + jitter;
    return static_cast<std::uint8_t>(value < 0 ? 0 : value > 255 ? 255 : value);
}

// Uniform floats in [lo, hi).
void fill_uniform(std::span<float> out, std::uint64_t seed, std::uint64_t stream, float lo, float hi);

// Uniform integers in [lo, hi] (inclusive).
void fill_uniform_int(std::span<std::int32_t> out, std::uint64_t seed, std::uint64_t stream,
                      std::int32_t lo, std::int32_t hi);

// Uniform unsigned integers in [lo, hi] (inclusive; hi may be 2^32 - 1).
void fill_uniform_u32(std::span<std::uint32_t> out, std::uint64_t seed, std::uint64_t stream,
                      std::uint32_t lo, std::uint32_t hi);

// out[i] = start + i * step, modulo 2^32.
void fill_ramp_u32(std::span<std::uint32_t> out, std::uint32_t start, std::int64_t step);

}  // namespace labkit
