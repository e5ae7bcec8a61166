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
