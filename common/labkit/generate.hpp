// Seeded input generators. Every element is a pure function of (seed, stream, index),
// so the harness and the trusted checker regenerate identical inputs independently,
// any element can be produced without its predecessors, and large arrays are filled on
// all cores without changing a single value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace labkit {

// SplitMix64's finaliser: a fast, well-mixed 64-bit hash.
constexpr std::uint64_t mix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// The 64 random bits of element `index` of stream `stream` under `seed`.
constexpr std::uint64_t random_bits(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
    return mix64(mix64(seed ^ mix64(stream + 0x632BE59BD9B4E019ull)) + index);
}

// A uniform double in [0, 1) with 53 random bits.
constexpr double random_unit(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
    return static_cast<double>(random_bits(seed, stream, index) >> 11) * 0x1.0p-53;
}

// Uniform floats in [lo, hi).
void fill_uniform(std::span<float> out, std::uint64_t seed, std::uint64_t stream, float lo, float hi);

// Uniform integers in [lo, hi] (inclusive).
void fill_uniform_int(std::span<std::int32_t> out, std::uint64_t seed, std::uint64_t stream,
                      std::int32_t lo, std::int32_t hi);

// Runs body(begin, end) over [0, n) in chunks on all hardware threads (one thread when
// n is small). Deterministic whenever body writes only its own range.
void parallel_for_ranges(std::size_t n, void (*body)(std::size_t, std::size_t, void*), void* context);

}  // namespace labkit
