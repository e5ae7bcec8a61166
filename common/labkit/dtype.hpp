// Element types of lab inputs and outputs, with their names and sizes; the numbers are
// the dtype codes of the binary file format (binary_io.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace labkit {

enum class DType : std::uint32_t { f32 = 1, f64 = 2, i32 = 3, u32 = 4, i64 = 5, u64 = 6, u8 = 7 };

constexpr std::size_t dtype_size(DType t) {
    switch (t) {
        case DType::f32: case DType::i32: case DType::u32: return 4;
        case DType::f64: case DType::i64: case DType::u64: return 8;
        case DType::u8: return 1;
    }
    return 0;
}

constexpr std::string_view dtype_name(DType t) {
    switch (t) {
        case DType::f32: return "f32";
        case DType::f64: return "f64";
        case DType::i32: return "i32";
        case DType::u32: return "u32";
        case DType::i64: return "i64";
        case DType::u64: return "u64";
        case DType::u8: return "u8";
    }
    return "unknown";
}

constexpr bool dtype_is_float(DType t) { return t == DType::f32 || t == DType::f64; }

constexpr std::optional<DType> dtype_from_code(std::uint32_t code) {
    if (code >= 1 && code <= 7) return static_cast<DType>(code);
    return std::nullopt;
}

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<std::int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<std::uint32_t>() { return DType::u32; }
template <> constexpr DType dtype_of<std::int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<std::uint64_t>() { return DType::u64; }
template <> constexpr DType dtype_of<std::uint8_t>() { return DType::u8; }

}  // namespace labkit
