// Tests of testkit/lower_precision.hpp, the rounding to TF32, bf16 and fp16 that the labs'
// tests use to show what a checker makes of lower-precision arithmetic.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "tests/testkit/lower_precision.hpp"

using testkit::to_bf16;
using testkit::to_fp16;
using testkit::to_tf32;

TEST_CASE("test_lower_precision_keeps_10_or_7_mantissa_bits_rounding_to_nearest_even") {
    // TF32: steps of 2^-10 above 1. Half a step rounds to the even neighbour.
    CHECK(to_tf32(1.0f + 0x1p-10f) == 1.0f + 0x1p-10f);
    CHECK(to_tf32(1.0f + 0x1p-11f) == 1.0f);                          // tie: to even (1)
    CHECK(to_tf32(1.0f + 0x1p-10f + 0x1p-11f) == 1.0f + 0x1p-9f);    // tie: to even (1 + 2^-9)
    CHECK(to_tf32(1.0f + 0x1p-11f + 0x1p-20f) == 1.0f + 0x1p-10f);   // past half: up
    CHECK(to_tf32(-(1.0f + 0x1p-11f + 0x1p-20f)) == -(1.0f + 0x1p-10f));
    // bf16: steps of 2^-7.
    CHECK(to_bf16(1.0f + 0x1p-7f) == 1.0f + 0x1p-7f);
    CHECK(to_bf16(1.0f + 0x1p-8f) == 1.0f);
    CHECK(to_bf16(1.0f / 3.0f) == 0x1.56p-2f);  // 0.333984375
    // A carry out of the mantissa raises the exponent; past the largest float, infinity.
    CHECK(to_tf32(0x1.fffffep0f) == 2.0f);
    CHECK(std::isinf(to_bf16(std::numeric_limits<float>::max())));
    // Relative error at most half a step: 2^-11 for TF32, 2^-8 for bf16.
    for (float x = 0.001f; x < 1000.0f; x *= 1.37f) {
        CHECK(std::fabs(to_tf32(x) - x) <= 0x1p-11f * x);
        CHECK(std::fabs(to_bf16(x) - x) <= 0x1p-8f * x);
    }
    CHECK(std::isnan(to_tf32(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("test_lower_precision_fp16_has_a_narrow_range") {
    CHECK(to_fp16(1.0f + 0x1p-11f) == 1.0f);
    CHECK(to_fp16(1.0f + 0x1p-10f) == 1.0f + 0x1p-10f);
    CHECK(to_fp16(65504.0f) == 65504.0f);  // the largest half
    CHECK(to_fp16(65519.0f) == 65504.0f);
    CHECK(std::isinf(to_fp16(65520.0f)));  // half-way to 2^16 rounds to even: infinity
    CHECK(std::isinf(to_fp16(16777216.0f)));
    CHECK(to_fp16(-16777216.0f) == -std::numeric_limits<float>::infinity());
    // Below 2^-14, subnormals: steps of 2^-24 whatever the size.
    CHECK(to_fp16(0x1p-14f) == 0x1p-14f);
    CHECK(to_fp16(0x1p-20f + 0x1p-26f) == 0x1p-20f);
    CHECK(to_fp16(0x1p-24f) == 0x1p-24f);
    CHECK(to_fp16(0x1p-26f) == 0.0f);
    CHECK(to_fp16(0x1.8p-24f) == 0x1p-23f);  // 1.5 steps: to even (2)
}
