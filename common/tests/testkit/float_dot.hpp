// One dot product of length k computed in float the ways a GPU kernel computes it, and
// with its inputs first rounded to a lower precision, for the tests of the checkers of
// the labs whose kernels multiply matrices. IEEE-754 float arithmetic gives the GPU's
// bits for each of these orders (std::fma is the GPU's FFMA: one rounding). Header-only,
// for tests only (under common/tests, so no student bundle holds it).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tests/testkit/lower_precision.hpp"

namespace testkit {

// How the products are added.
enum class Order {
    running_sum,  // one accumulator over all of k: `sum += a * b` (the naive and the tiled kernels)
    tile_16,      // a partial sum per tile of 16 values of k, each added into the total
    tile_32,      // the same with tiles of 32
    split_k,      // k cut into `parts` chunks, one partial sum each, added in chunk order
};

// What the inputs go through before they are multiplied.
enum class Inputs { float32, tf32, bf16, fp16 };

struct Arithmetic {
    Order order = Order::running_sum;
    bool fused = true;          // a * b + c rounded once (FFMA), or the product rounded first
    std::size_t parts = 1;      // split_k's chunks
    Inputs inputs = Inputs::float32;

    bool is_float32() const { return inputs == Inputs::float32; }

    std::string name() const {
        std::string text;
        switch (order) {
            case Order::running_sum: text = "one running sum"; break;
            case Order::tile_16: text = "a partial sum per tile of 16"; break;
            case Order::tile_32: text = "a partial sum per tile of 32"; break;
            case Order::split_k: text = "k split in " + std::to_string(parts); break;
        }
        text += fused ? ", FMA" : ", no FMA";
        switch (inputs) {
            case Inputs::float32: break;
            case Inputs::tf32: text = "TF32 inputs, " + text; break;
            case Inputs::bf16: text = "bf16 inputs, " + text; break;
            case Inputs::fp16: text = "fp16 inputs, " + text; break;
        }
        return text;
    }
};

inline float rounded_input(float x, Inputs inputs) {
    switch (inputs) {
        case Inputs::float32: return x;
        case Inputs::tf32: return to_tf32(x);
        case Inputs::bf16: return to_bf16(x);
        case Inputs::fp16: return to_fp16(x);
    }
    return x;
}

// Σ_p a[p] * b[p] for p in [begin, end), one accumulator.
inline float running_sum(const float* a, const float* b, std::size_t begin, std::size_t end, bool fused) {
    float acc = 0.0f;
    for (std::size_t p = begin; p < end; ++p) {
        if (fused) {
            acc = std::fma(a[p], b[p], acc);
        } else {
            const float product = a[p] * b[p];
            acc = acc + product;
        }
    }
    return acc;
}

// a · b (k values each, contiguous) as `arithmetic` computes it. `scratch` holds the
// rounded inputs (reused between calls).
inline float dot(const Arithmetic& arithmetic, const float* a, const float* b, std::size_t k,
                 std::vector<float>& scratch) {
    if (!arithmetic.is_float32()) {
        scratch.resize(2 * k);
        for (std::size_t p = 0; p < k; ++p) {
            scratch[p] = rounded_input(a[p], arithmetic.inputs);
            scratch[k + p] = rounded_input(b[p], arithmetic.inputs);
        }
        a = scratch.data();
        b = scratch.data() + k;
    }
    const bool fused = arithmetic.fused;
    switch (arithmetic.order) {
        case Order::running_sum: return running_sum(a, b, 0, k, fused);
        case Order::tile_16:
        case Order::tile_32: {
            const std::size_t tile = arithmetic.order == Order::tile_16 ? 16 : 32;
            float total = 0.0f;
            for (std::size_t t0 = 0; t0 < k; t0 += tile)
                total += running_sum(a, b, t0, t0 + tile < k ? t0 + tile : k, fused);
            return total;
        }
        case Order::split_k: {
            const std::size_t chunk = (k + arithmetic.parts - 1) / arithmetic.parts;
            float total = 0.0f;
            for (std::size_t c0 = 0; c0 < k; c0 += chunk)
                total += running_sum(a, b, c0, c0 + chunk < k ? c0 + chunk : k, fused);
            return total;
        }
    }
    return 0.0f;
}

// C = A*B computed element by element with `arithmetic`: A is m x k, row-major; B is given
// column by column (n columns of k values), so that every element's operands are
// contiguous. Only the elements `only` lists (flat indices) when it is not empty; the
// others are left NaN, so that a checker that looked at them would fail.
inline std::vector<float> product(const Arithmetic& arithmetic, const std::vector<float>& a,
                                  const std::vector<float>& b_columns, std::uint64_t m, std::uint64_t n,
                                  std::uint64_t k, const std::vector<std::uint64_t>& only = {}) {
    std::vector<float> c(m * n, std::numeric_limits<float>::quiet_NaN()), scratch;
    const auto compute = [&](std::uint64_t e) {
        c[e] = dot(arithmetic, a.data() + e / n * k, b_columns.data() + e % n * k, k, scratch);
    };
    if (only.empty()) {
        for (std::uint64_t e = 0; e < m * n; ++e) compute(e);
    } else {
        for (const std::uint64_t e : only) compute(e);
    }
    return c;
}

// B (k x n, row-major) column by column, as product() takes it.
inline std::vector<float> columns_of(const float* b, std::uint64_t k, std::uint64_t n) {
    std::vector<float> columns(k * n);
    for (std::uint64_t q = 0; q < k; ++q)
        for (std::uint64_t j = 0; j < n; ++j) columns[j * k + q] = b[q * n + j];
    return columns;
}

// Every float32 order the tests hold a checker to: one running sum, tiles of 16 and 32,
// k split in 2 to 8, each with and without FMA.
inline std::vector<Arithmetic> float32_arithmetics() {
    std::vector<Arithmetic> all;
    for (const bool fused : {false, true}) {
        all.push_back({Order::running_sum, fused});
        all.push_back({Order::tile_16, fused});
        all.push_back({Order::tile_32, fused});
        for (std::size_t parts = 2; parts <= 8; ++parts) all.push_back({Order::split_k, fused, parts});
    }
    return all;
}

// Inputs rounded to TF32, bf16 and fp16, accumulated in float: one running sum of fused
// multiply-adds, and a partial sum per tile of 16 (a tensor core's fragments along k).
inline std::vector<Arithmetic> lower_precision_arithmetics() {
    std::vector<Arithmetic> all;
    for (const Inputs inputs : {Inputs::tf32, Inputs::bf16, Inputs::fp16}) {
        all.push_back({Order::running_sum, true, 1, inputs});
        all.push_back({Order::tile_16, true, 1, inputs});
    }
    return all;
}

}  // namespace testkit
