// Rounding floats to the formats of lower-precision arithmetic (TF32, bf16, fp16), for
// tests that show what a checker makes of answers computed in them. Header-only and for
// tests only: nothing a lab binary or the checker builds includes it.
//
// Each keeps float's sign and, except fp16, its exponent range, and rounds the 23 explicit
// bits of the mantissa to fewer, to nearest with ties to even (the conversions of CUDA's
// cuda_bf16.h and cuda_fp16.h; __float_to_tf32 rounds ties away from zero, which differs
// only on exact ties).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace testkit {

// x with only `kept` of float's 23 explicit mantissa bits (0 < kept < 23), rounded to
// nearest, ties to even; a carry out of the mantissa raises the exponent (to infinity
// past the largest float). NaN and infinities are returned as they are.
inline float round_mantissa(float x, int kept) {
    if (!std::isfinite(x)) return x;
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    const int dropped = 23 - kept;
    const std::uint32_t half_minus_one = (std::uint32_t{1} << (dropped - 1)) - 1;
    const std::uint32_t lowest_kept = (bits >> dropped) & 1u;
    bits = (bits + half_minus_one + lowest_kept) & ~((std::uint32_t{1} << dropped) - 1);
    float rounded;
    std::memcpy(&rounded, &bits, sizeof rounded);
    return rounded;
}

// TF32, the tensor cores' format for float inputs: 10 explicit mantissa bits.
inline float to_tf32(float x) { return round_mantissa(x, 10); }

// bfloat16: 7 explicit mantissa bits.
inline float to_bf16(float x) { return round_mantissa(x, 7); }

// IEEE binary16 (fp16): 10 explicit mantissa bits, normal numbers from 2^-14 up to 65504;
// below 2^-14, subnormals in steps of 2^-24; from 65520 up (half-way to the next power
// of two) infinity.
inline float to_fp16(float x) {
    if (!std::isfinite(x)) return x;
    if (std::fabs(x) < 0x1p-14f) return std::nearbyint(x * 0x1p24f) * 0x1p-24f;  // exact scaling
    const float rounded = round_mantissa(x, 10);
    return std::fabs(rounded) > 65504.0f ? std::copysign(INFINITY, x) : rounded;
}

}  // namespace testkit
