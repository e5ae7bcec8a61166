// How a lab's inputs are made: each input array is described once (name, type, shape,
// and how its elements follow from the seed), and labkit fills it from that one
// description on the CPU (the trusted checker, tests) or on the GPU (the harness, which
// needs a fresh set for every timed sample). Both use the element functions of
// generate.hpp, so the two agree bit for bit.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "labkit/host_array.hpp"

namespace labkit {

struct Fill {
    enum class Kind : std::uint32_t {
        uniform_float = 1,  // f32, uniform in [lo, hi)
        uniform_int = 2,    // i32, uniform in [lo, hi] (both ends included)
        uniform_u32 = 3,    // u32, uniform in [lo, hi] (both ends included; hi up to 2^32 - 1)
        ramp_u32 = 4,       // u32, element i = lo + i * step, modulo 2^32 (no randomness)
        uniform_u8 = 5,     // u8, uniform in [lo, hi] (both ends included)
        cells_u8 = 6,       // u8, an image of width `width`: flat cells of `cell` x `cell` pixels, each
                            // a random gray level, plus noise uniform in [-noise, noise] per pixel
        bytes = 7,          // u8, a copy of `data` (a dataset image built into the binary; no seed)
        tiles_u8 = 8,       // u8, an image of width `width` covered by the photograph `data`
                            // (source_width x source_height) in mirrored copies, turned and shifted
                            // by the seed, plus noise uniform in [-noise, noise] per pixel
    };
    Kind kind = Kind::uniform_float;
    std::uint64_t stream = 0;  // independent streams for the arrays of one case
    double lo = 0.0;
    double hi = 1.0;
    // Elements set to fixed values after the random fill (e.g. x[0] = 2^24, the
    // reduction lab's hard case). Kept few: they are written one by one.
    std::vector<std::pair<std::uint64_t, double>> fixed;
    // ramp_u32 only: the difference between neighbouring elements (negative: descending).
    std::int64_t step = 0;
    // cells_u8 and tiles_u8: the image's width and the noise's amplitude; cells_u8: the side of a cell.
    std::uint64_t width = 0;
    std::uint32_t cell = 0;
    std::uint32_t noise = 0;
    // bytes: the elements, as many as the array has; tiles_u8: the photograph's pixels,
    // source_width x source_height of them (both kept alive by the binary).
    const unsigned char* data = nullptr;
    std::uint32_t source_width = 0;
    std::uint32_t source_height = 0;

    static Fill uniform_float(std::uint64_t stream, float lo, float hi) {
        return Fill{Kind::uniform_float, stream, lo, hi, {}};
    }
    static Fill uniform_int(std::uint64_t stream, std::int32_t lo, std::int32_t hi) {
        return Fill{Kind::uniform_int, stream, static_cast<double>(lo), static_cast<double>(hi), {}};
    }
    // All equal: uniform_u32(stream, c, c).
    static Fill uniform_u32(std::uint64_t stream, std::uint32_t lo, std::uint32_t hi) {
        return Fill{Kind::uniform_u32, stream, static_cast<double>(lo), static_cast<double>(hi), {}, 0};
    }
    // Ascending (step > 0), descending (step < 0), or the index ramp 0, 1, 2, ... (start 0,
    // step 1). Wraps modulo 2^32, so a lab keeps start + (n - 1) * step in range itself.
    static Fill ramp_u32(std::uint32_t start, std::int64_t step) {
        return Fill{Kind::ramp_u32, 0, static_cast<double>(start), 0.0, {}, step};
    }
    static Fill uniform_u8(std::uint64_t stream, std::uint8_t lo, std::uint8_t hi) {
        return Fill{Kind::uniform_u8, stream, static_cast<double>(lo), static_cast<double>(hi), {}, 0};
    }
    static Fill cells_u8(std::uint64_t stream, std::uint64_t width, std::uint32_t cell, std::uint32_t noise) {
        Fill f{Kind::cells_u8, stream, 0.0, 255.0, {}, 0};
        f.width = width;
        f.cell = cell;
        f.noise = noise;
        return f;
    }
    static Fill bytes(const unsigned char* data) {
        Fill f{Kind::bytes, 0, 0.0, 255.0, {}, 0};
        f.data = data;
        return f;
    }
    // An image `width` wide tiled with a photograph of source_width x source_height pixels.
    static Fill tiles_u8(std::uint64_t stream, std::uint64_t width, const unsigned char* source,
                         std::uint32_t source_width, std::uint32_t source_height, std::uint32_t noise) {
        Fill f{Kind::tiles_u8, stream, 0.0, 255.0, {}, 0};
        f.width = width;
        f.noise = noise;
        f.data = source;
        f.source_width = source_width;
        f.source_height = source_height;
        return f;
    }
    Fill with_element(std::uint64_t index, double value) && {
        fixed.emplace_back(index, value);
        return std::move(*this);
    }
};

struct InputSpec {
    std::string name;
    DType dtype = DType::f32;
    std::vector<std::uint64_t> shape;
    Fill fill;

    std::uint64_t size() const {
        std::uint64_t n = 1;
        for (auto e : shape) n *= e;
        return n;
    }
};

// The elements of an 8-bit fill (uniform_u8, cells_u8, bytes, tiles_u8), generated on the CPU.
void fill_u8(std::span<std::uint8_t> out, std::uint64_t seed, const Fill& fill);

// Throws std::invalid_argument when the fill does not suit the array (a float fill of an
// integer array, lo >= hi, a fixed element out of range): a lab's mistake, said plainly.
void validate(const InputSpec& spec);

// The array `spec` describes, generated on the CPU from `seed`.
HostArray generate_on_host(const InputSpec& spec, std::uint64_t seed);

}  // namespace labkit
