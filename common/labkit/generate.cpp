#include "labkit/generate.hpp"

#include <algorithm>
#include <stdexcept>

#include "labkit/inputs.hpp"
#include "labkit/parallel.hpp"

namespace labkit {

void fill_uniform(std::span<float> out, std::uint64_t seed, std::uint64_t stream, float lo, float hi) {
    if (!(lo < hi)) throw std::invalid_argument("fill_uniform needs lo < hi");
    struct Ctx { float* data; std::uint64_t seed, stream; double lo, width; float hi; } ctx{
        out.data(), seed, stream, lo, static_cast<double>(hi) - lo, hi};
    parallel_for_ranges(out.size(), [](std::size_t b, std::size_t e, void* p) {
        auto& c = *static_cast<Ctx*>(p);
        for (std::size_t i = b; i < e; ++i) c.data[i] = uniform_float_at(c.seed, c.stream, i, c.lo, c.width, c.hi);
    }, &ctx);
}

void fill_uniform_int(std::span<std::int32_t> out, std::uint64_t seed, std::uint64_t stream,
                      std::int32_t lo, std::int32_t hi) {
    if (lo > hi) throw std::invalid_argument("fill_uniform_int needs lo <= hi");
    struct Ctx { std::int32_t* data; std::uint64_t seed, stream; std::int64_t lo; std::uint64_t span; } ctx{
        out.data(), seed, stream, lo, static_cast<std::uint64_t>(std::int64_t(hi) - lo + 1)};
    parallel_for_ranges(out.size(), [](std::size_t b, std::size_t e, void* p) {
        auto& c = *static_cast<Ctx*>(p);
        for (std::size_t i = b; i < e; ++i) c.data[i] = uniform_int_at(c.seed, c.stream, i, c.lo, c.span);
    }, &ctx);
}

void fill_uniform_u32(std::span<std::uint32_t> out, std::uint64_t seed, std::uint64_t stream,
                      std::uint32_t lo, std::uint32_t hi) {
    if (lo > hi) throw std::invalid_argument("fill_uniform_u32 needs lo <= hi");
    struct Ctx { std::uint32_t* data; std::uint64_t seed, stream; std::uint32_t lo; std::uint64_t span; } ctx{
        out.data(), seed, stream, lo, static_cast<std::uint64_t>(hi) - lo + 1};
    parallel_for_ranges(out.size(), [](std::size_t b, std::size_t e, void* p) {
        auto& c = *static_cast<Ctx*>(p);
        for (std::size_t i = b; i < e; ++i) c.data[i] = uniform_u32_at(c.seed, c.stream, i, c.lo, c.span);
    }, &ctx);
}

void fill_ramp_u32(std::span<std::uint32_t> out, std::uint32_t start, std::int64_t step) {
    struct Ctx { std::uint32_t* data; std::uint32_t start; std::int64_t step; } ctx{out.data(), start, step};
    parallel_for_ranges(out.size(), [](std::size_t b, std::size_t e, void* p) {
        auto& c = *static_cast<Ctx*>(p);
        for (std::size_t i = b; i < e; ++i) c.data[i] = ramp_u32_at(i, c.start, c.step);
    }, &ctx);
}

void fill_u8(std::span<std::uint8_t> out, std::uint64_t seed, const Fill& fill) {
    if (out.empty()) return;
    if (fill.kind == Fill::Kind::bytes) {
        std::copy(fill.data, fill.data + out.size(), out.begin());
        return;
    }
    if (fill.kind == Fill::Kind::tiles_u8 &&
        (fill.width == 0 || out.size() % fill.width != 0 || fill.data == nullptr || fill.source_width == 0 ||
         fill.source_height == 0))
        throw std::invalid_argument("fill_u8: tiles_u8 fills whole rows of its width from a photograph of 1 x 1 pixels or more");
    struct Ctx { std::uint8_t* data; std::uint64_t seed; const Fill* fill; TilePlacement placement; } ctx{
        out.data(), seed, &fill,
        fill.kind == Fill::Kind::tiles_u8 ? tile_placement(seed, fill.stream, fill.source_width, fill.source_height)
                                          : TilePlacement{}};
    parallel_for_ranges(out.size(), [](std::size_t b, std::size_t e, void* p) {
        auto& c = *static_cast<Ctx*>(p);
        const Fill& f = *c.fill;
        if (f.kind == Fill::Kind::tiles_u8) {
            std::uint64_t x = b % f.width, y = b / f.width;
            for (std::size_t i = b; i < e; ++i) {
                c.data[i] = tiled_u8_at(c.seed, f.stream, f.data, f.source_width, f.source_height, c.placement, x, y,
                                        f.width, f.noise);
                if (++x == f.width) x = 0, ++y;
            }
        } else if (f.kind == Fill::Kind::uniform_u8) {
            const auto lo = static_cast<std::uint32_t>(f.lo), span = static_cast<std::uint32_t>(f.hi) - lo + 1;
            for (std::size_t i = b; i < e; ++i) c.data[i] = uniform_u8_at(c.seed, f.stream, i, lo, span);
        } else {
            for (std::size_t i = b; i < e; ++i) c.data[i] = cells_u8_at(c.seed, f.stream, i, f.width, f.cell, f.noise);
        }
    }, &ctx);
}

namespace {

// Whether `value` is a whole number an unsigned 32-bit element can hold.
bool is_u32(double value) { return value >= 0.0 && value <= 4294967295.0 && value == static_cast<double>(static_cast<std::uint64_t>(value)); }

}  // namespace

void validate(const InputSpec& spec) {
    const auto where = [&] { return "input '" + spec.name + "': "; };
    switch (spec.fill.kind) {
        case Fill::Kind::uniform_float:
            if (spec.dtype != DType::f32) throw std::invalid_argument(where() + "a uniform_float fill needs dtype f32");
            if (!(spec.fill.lo < spec.fill.hi)) throw std::invalid_argument(where() + "uniform_float needs lo < hi");
            break;
        case Fill::Kind::uniform_int:
            if (spec.dtype != DType::i32) throw std::invalid_argument(where() + "a uniform_int fill needs dtype i32");
            if (spec.fill.lo > spec.fill.hi) throw std::invalid_argument(where() + "uniform_int needs lo <= hi");
            break;
        case Fill::Kind::uniform_u32:
            if (spec.dtype != DType::u32) throw std::invalid_argument(where() + "a uniform_u32 fill needs dtype u32");
            if (!is_u32(spec.fill.lo) || !is_u32(spec.fill.hi))
                throw std::invalid_argument(where() + "uniform_u32 needs whole lo and hi in [0, 2^32 - 1]");
            if (spec.fill.lo > spec.fill.hi) throw std::invalid_argument(where() + "uniform_u32 needs lo <= hi");
            break;
        case Fill::Kind::ramp_u32:
            if (spec.dtype != DType::u32) throw std::invalid_argument(where() + "a ramp_u32 fill needs dtype u32");
            if (!is_u32(spec.fill.lo)) throw std::invalid_argument(where() + "ramp_u32 needs a whole start in [0, 2^32 - 1]");
            break;
        case Fill::Kind::uniform_u8:
            if (spec.dtype != DType::u8) throw std::invalid_argument(where() + "a uniform_u8 fill needs dtype u8");
            if (!is_u32(spec.fill.lo) || !is_u32(spec.fill.hi) || spec.fill.lo > spec.fill.hi || spec.fill.hi > 255)
                throw std::invalid_argument(where() + "uniform_u8 needs whole lo <= hi in [0, 255]");
            break;
        case Fill::Kind::cells_u8:
            if (spec.dtype != DType::u8) throw std::invalid_argument(where() + "a cells_u8 fill needs dtype u8");
            if (spec.shape.size() != 2 || spec.fill.width != spec.shape[1])
                throw std::invalid_argument(where() + "cells_u8 fills a height x width image: its width must be shape[1]");
            if (spec.fill.cell == 0 || spec.fill.noise > 255)
                throw std::invalid_argument(where() + "cells_u8 needs a cell of 1 pixel or more and noise <= 255");
            break;
        case Fill::Kind::bytes:
            if (spec.dtype != DType::u8) throw std::invalid_argument(where() + "a bytes fill needs dtype u8");
            if (spec.fill.data == nullptr) throw std::invalid_argument(where() + "a bytes fill needs its data");
            break;
        case Fill::Kind::tiles_u8:
            if (spec.dtype != DType::u8) throw std::invalid_argument(where() + "a tiles_u8 fill needs dtype u8");
            if (spec.shape.size() != 2 || spec.fill.width != spec.shape[1])
                throw std::invalid_argument(where() + "tiles_u8 fills a height x width image: its width must be shape[1]");
            if (spec.fill.data == nullptr || spec.fill.source_width == 0 || spec.fill.source_height == 0)
                throw std::invalid_argument(where() + "tiles_u8 needs a photograph of 1 x 1 pixels or more to tile with");
            if (spec.fill.noise > 255) throw std::invalid_argument(where() + "tiles_u8 needs noise <= 255");
            break;
        default: throw std::invalid_argument(where() + "unknown fill kind");
    }
    for (const auto& [index, value] : spec.fill.fixed) {
        if (spec.dtype == DType::u8 && !(is_u32(value) && value <= 255))
            throw std::invalid_argument(where() + "fixed element " + std::to_string(index) + " is not a u8 value");
        if (spec.dtype == DType::u32 && !is_u32(value))
            throw std::invalid_argument(where() + "fixed element " + std::to_string(index) + " is not a u32 value");
        if (index >= spec.size())
            throw std::invalid_argument(where() + "fixed element " + std::to_string(index) + " is outside its " +
                                        std::to_string(spec.size()) + " elements");
    }
}

HostArray generate_on_host(const InputSpec& spec, std::uint64_t seed) {
    validate(spec);
    HostArray array;
    array.name = spec.name;
    array.dtype = spec.dtype;
    array.shape = spec.shape;
    resize_prefaulted(array.bytes, static_cast<std::size_t>(spec.size()) * dtype_size(spec.dtype));
    const Fill& f = spec.fill;
    if (f.kind == Fill::Kind::uniform_float) {
        auto values = array.as<float>();
        fill_uniform(values, seed, f.stream, static_cast<float>(f.lo), static_cast<float>(f.hi));
        for (const auto& [index, value] : f.fixed) values[index] = static_cast<float>(value);
    } else if (f.kind == Fill::Kind::uniform_u32 || f.kind == Fill::Kind::ramp_u32) {
        auto values = array.as<std::uint32_t>();
        if (f.kind == Fill::Kind::uniform_u32)
            fill_uniform_u32(values, seed, f.stream, static_cast<std::uint32_t>(f.lo), static_cast<std::uint32_t>(f.hi));
        else
            fill_ramp_u32(values, static_cast<std::uint32_t>(f.lo), f.step);
        for (const auto& [index, value] : f.fixed) values[index] = static_cast<std::uint32_t>(value);
    } else if (spec.dtype == DType::u8) {
        auto values = array.as<std::uint8_t>();
        fill_u8(values, seed, f);
        for (const auto& [index, value] : f.fixed) values[index] = static_cast<std::uint8_t>(value);
    } else {
        auto values = array.as<std::int32_t>();
        fill_uniform_int(values, seed, f.stream, static_cast<std::int32_t>(f.lo), static_cast<std::int32_t>(f.hi));
        for (const auto& [index, value] : f.fixed) values[index] = static_cast<std::int32_t>(value);
    }
    return array;
}

}  // namespace labkit
