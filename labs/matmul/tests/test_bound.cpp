// Tests of the matmul tolerance (labkit/matmul_reference.hpp) in both directions, through
// the checker's own reference and comparison (lab_matmul::reference, compare_within_tolerance):
//
// (a) Correct products pass. Each element is computed here in float the way a kernel
//     might: a sequential loop with separate multiply and add, with fused multiply-adds
//     (std::fma, the GPU's FFMA: one rounding), backwards, tile by tile with a partial
//     sum per tile of 16 or 32, split into four chunks of k, and as a pairwise tree.
//     IEEE-754 float arithmetic gives the GPU's bits for each of these orders. They all
//     pass, at every k from 1 to 4097, on the lab's own cases and on inputs built to
//     round badly (one huge product that cancels against another).
// (b) Wrong products fail, and the message names the first wrong element: the last
//     partial tile of k left out, the B row of the next tile used, the first tile of k
//     added twice, the last product left out, A read as if it were column-major.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "labkit/compare.hpp"
#include "problem.hpp"

namespace {

// A case's inputs, as the checker regenerates them.
struct Matrices {
    std::uint64_t m, n, k;
    std::vector<float> a, b;  // row-major: a is m x k, b is k x n
    labkit::CaseSpec spec;

    float at_a(std::uint64_t i, std::uint64_t p) const { return a[i * k + p]; }
    float at_b(std::uint64_t p, std::uint64_t j) const { return b[p * n + j]; }
};

labkit::CaseSpec spec_of(std::uint64_t m, std::uint64_t n, std::uint64_t k, int dist) {
    std::string name = "custom_";  // appended piece by piece: GCC 12 misreports a chain of + here
    name += std::to_string(m);
    name += 'x';
    name += std::to_string(n);
    name += 'x';
    name += std::to_string(k);
    return {name,
            {{"m", static_cast<std::int64_t>(m)},
             {"n", static_cast<std::int64_t>(n)},
             {"k", static_cast<std::int64_t>(k)},
             {"dist", dist}}};
}

Matrices generate(const labkit::CaseSpec& spec, std::uint64_t seed) {
    const auto inputs = labkit::make_host_inputs(lab_matmul::problem(), spec, seed);
    const auto a = inputs.at(0).as<float>();
    const auto b = inputs.at(1).as<float>();
    return {static_cast<std::uint64_t>(spec.param("m")), static_cast<std::uint64_t>(spec.param("n")),
            static_cast<std::uint64_t>(spec.param("k")), {a.begin(), a.end()}, {b.begin(), b.end()}, spec};
}

// One element c_ij, computed in float in some order.
using Dot = std::function<float(const Matrices&, std::uint64_t i, std::uint64_t j)>;

// ---- Correct orders ------------------------------------------------------------------

// The textbook loop, multiply and add rounded separately (what -fmad=false gives).
float sequential(const Matrices& x, std::uint64_t i, std::uint64_t j) {
    float acc = 0.0f;
    for (std::uint64_t p = 0; p < x.k; ++p) {
        const float product = x.at_a(i, p) * x.at_b(p, j);
        acc = acc + product;
    }
    return acc;
}

// The same loop with fused multiply-adds: what nvcc makes of `sum += a * b` by default.
float sequential_fma(const Matrices& x, std::uint64_t i, std::uint64_t j) {
    float acc = 0.0f;
    for (std::uint64_t p = 0; p < x.k; ++p) acc = std::fma(x.at_a(i, p), x.at_b(p, j), acc);
    return acc;
}

float backwards_fma(const Matrices& x, std::uint64_t i, std::uint64_t j) {
    float acc = 0.0f;
    for (std::uint64_t p = x.k; p-- > 0;) acc = std::fma(x.at_a(i, p), x.at_b(p, j), acc);
    return acc;
}

// A partial sum per tile of kTile values of k (fused), each added to the running total.
template <std::uint64_t kTile>
float tile_partials(const Matrices& x, std::uint64_t i, std::uint64_t j) {
    float acc = 0.0f;
    for (std::uint64_t t0 = 0; t0 < x.k; t0 += kTile) {
        float part = 0.0f;
        for (std::uint64_t p = t0; p < t0 + kTile && p < x.k; ++p) part = std::fma(x.at_a(i, p), x.at_b(p, j), part);
        acc += part;
    }
    return acc;
}

// k split into four chunks (as four blocks of a split-k kernel), added as a tree.
float split_k_4(const Matrices& x, std::uint64_t i, std::uint64_t j) {
    float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const std::uint64_t chunk = (x.k + 3) / 4;
    for (std::uint64_t p = 0; p < x.k; ++p) part[p / chunk] = std::fma(x.at_a(i, p), x.at_b(p, j), part[p / chunk]);
    return (part[0] + part[1]) + (part[2] + part[3]);
}

// Products rounded to float, then added as a balanced tree.
float pairwise_sum(const std::vector<float>& v, std::size_t begin, std::size_t end) {
    if (end - begin == 1) return v[begin];
    const std::size_t half = begin + (end - begin) / 2;
    return pairwise_sum(v, begin, half) + pairwise_sum(v, half, end);
}

float pairwise(const Matrices& x, std::uint64_t i, std::uint64_t j) {
    std::vector<float> products(x.k);
    for (std::uint64_t p = 0; p < x.k; ++p) products[p] = x.at_a(i, p) * x.at_b(p, j);
    return pairwise_sum(products, 0, products.size());
}

struct Named {
    const char* name;
    Dot dot;
};

const std::vector<Named>& correct_orders() {
    static const std::vector<Named> orders{
        {"sequential, multiply and add rounded separately", sequential},
        {"sequential, fused multiply-add", sequential_fma},
        {"backwards, fused multiply-add", backwards_fma},
        {"a partial sum per tile of 16", tile_partials<16>},
        {"a partial sum per tile of 32", tile_partials<32>},
        {"k split into four chunks", split_k_4},
        {"pairwise tree of rounded products", pairwise},
    };
    return orders;
}

// ---- Wrong ones: the bugs of a tile index -------------------------------------------

constexpr std::uint64_t kTile = 32;

// `for (t = 0; t < k / kTile; ++t)`: the last, partial tile of k is never loaded.
float drops_last_partial_tile(const Matrices& x, std::uint64_t i, std::uint64_t j) {
    float acc = 0.0f;
    for (std::uint64_t p = 0; p < x.k / kTile * kTile; ++p) acc = std::fma(x.at_a(i, p), x.at_b(p, j), acc);
    return acc;
}

// The B tile loaded from the next tile's rows (t + 1 for t), wrapping at the end.
float next_tile_rows_of_b(const Matrices& x, std::uint64_t i, std::uint64_t j) {
    float acc = 0.0f;
    for (std::uint64_t p = 0; p < x.k; ++p) acc = std::fma(x.at_a(i, p), x.at_b((p + kTile) % x.k, j), acc);
    return acc;
}

// The first tile of k added twice (a loop that starts at t = -1, clamped).
float first_tile_twice(const Matrices& x, std::uint64_t i, std::uint64_t j) {
    float acc = sequential_fma(x, i, j);
    for (std::uint64_t p = 0; p < kTile && p < x.k; ++p) acc = std::fma(x.at_a(i, p), x.at_b(p, j), acc);
    return acc;
}

// `p < k - 1`: the last product left out.
float drops_last_product(const Matrices& x, std::uint64_t i, std::uint64_t j) {
    float acc = 0.0f;
    for (std::uint64_t p = 0; p + 1 < x.k; ++p) acc = std::fma(x.at_a(i, p), x.at_b(p, j), acc);
    return acc;
}

// A read as if it were stored column-major: a[p * m + i] instead of a[i * k + p].
float reads_a_column_major(const Matrices& x, std::uint64_t i, std::uint64_t j) {
    float acc = 0.0f;
    for (std::uint64_t p = 0; p < x.k; ++p) {
        const std::uint64_t flat = p * x.m + i;
        acc = std::fma(x.a[flat], x.at_b(p, j), acc);
    }
    return acc;
}

// ---- The checker's verdict ------------------------------------------------------------

struct Verdict {
    labkit::CompareReport report;
    labkit::Expected expected;
    labkit::HostArray got;
};

Verdict judge(const Matrices& x, const Dot& dot) {
    const std::vector<labkit::HostArray> inputs = [&] {
        auto a = labkit::HostArray::make<float>("a", {x.m, x.k});
        auto b = labkit::HostArray::make<float>("b", {x.k, x.n});
        std::copy(x.a.begin(), x.a.end(), a.as<float>().begin());
        std::copy(x.b.begin(), x.b.end(), b.as<float>().begin());
        return std::vector<labkit::HostArray>{std::move(a), std::move(b)};
    }();
    auto expected = lab_matmul::reference(x.spec, inputs);
    REQUIRE(expected.size() == 1);
    auto got = labkit::HostArray::make<float>("c", {x.m, x.n});
    auto c = got.as<float>();
    for (std::uint64_t i = 0; i < x.m; ++i)
        for (std::uint64_t j = 0; j < x.n; ++j) c[i * x.n + j] = dot(x, i, j);
    const auto tolerance = lab_matmul::problem().output("c").tolerance;
    auto report = labkit::compare_within_tolerance(expected[0], got, tolerance);
    return {std::move(report), std::move(expected[0]), std::move(got)};
}

// How far the worst element is from the exact product, as a fraction of its bound.
double worst_fraction_of_bound(const Verdict& v) {
    double worst = 0.0;
    const auto c = v.got.as<float>();
    for (std::size_t e = 0; e < c.size(); ++e)
        worst = std::max(worst, std::fabs(static_cast<double>(c[e]) - v.expected.values[e]) / v.expected.allowed_abs[e]);
    return worst;
}

// A wrong product fails, the message names its first wrong element (row-major order)
// and the allowed difference there, and the mistake shows in at least `share` of C.
void check_caught(const Matrices& x, const Dot& bug, double share) {
    const Verdict v = judge(x, bug);
    REQUIRE_FALSE(v.report.passed);
    const auto c = v.got.as<float>();
    std::uint64_t first = 0;
    while (first < c.size() &&
           std::fabs(static_cast<double>(c[first]) - v.expected.values[first]) <= v.expected.allowed_abs[first])
        ++first;
    REQUIRE(first < c.size());
    const std::string named = labkit::describe_index("c", {x.m, x.n}, first) + " is wrong: expected ";
    CHECK(v.report.message.find(named) == 0);
    CHECK(v.report.message.find("(allowed difference ") != std::string::npos);
    CHECK(static_cast<double>(v.report.mismatches) >= share * static_cast<double>(x.m * x.n));
}

}  // namespace

TEST_CASE("test_matmul_bound_passes_every_order_at_every_k") {
    for (std::uint64_t k : {1u, 2u, 3u, 17u, 31u, 33u, 65u, 256u, 1000u, 2049u, 4097u}) {
        for (int dist : {0, 1}) {
            const Matrices x = generate(spec_of(5, 7, k, dist), 21 + k);
            for (const auto& order : correct_orders()) {
                CAPTURE(k);
                CAPTURE(dist);
                CAPTURE(order.name);
                const Verdict v = judge(x, order.dot);
                CHECK_MESSAGE(v.report.passed, v.report.message);
            }
        }
    }
}

TEST_CASE("test_matmul_bound_passes_every_order_on_the_lab_cases") {
    const auto p = lab_matmul::problem();
    for (const char* name : {"m1_n1_k1", "m33_n17_k65", "m100_n101_k99", "m4097_n3_k64", "m3_n4097_k64",
                             "m63_n65_k4097", "m257_n129_k1"}) {
        const Matrices x = generate(*p.find(name), 3);
        for (const auto& order : correct_orders()) {
            CAPTURE(name);
            CAPTURE(order.name);
            const Verdict v = judge(x, order.dot);
            CHECK_MESSAGE(v.report.passed, v.report.message);
            // The bound is a guarantee, not a typical error: with more than a few products,
            // a correct product stays well inside it.
            if (x.k >= 64) CHECK(worst_fraction_of_bound(v) < 0.5);
        }
    }
}

TEST_CASE("test_matmul_bound_allows_for_cancellation") {
    // In each dot product a huge product, +2^24, comes first and its negative last; in
    // between, 2000 ordinary ones, which a float sum running near 2^24 rounds to whole
    // numbers. c_ij itself is small, but the rounding happened at 2^24: the bound is a
    // multiple of Σ|a·b|, not of |c_ij|, so every element of every order is within it.
    // (The test of the whole product is not: it assumes the lab's random inputs, whose
    // partial sums stay near the size of their products, and a running sum here rounds
    // 2000 times at 2^24. No lab case has such inputs; labkit/matmul_reference.hpp says so.)
    Matrices x = generate(spec_of(4, 6, 2002, 0), 8);
    for (std::uint64_t i = 0; i < x.m; ++i) {
        x.a[i * x.k + 0] = 4096.0f;
        x.a[i * x.k + x.k - 1] = -4096.0f;
    }
    for (std::uint64_t j = 0; j < x.n; ++j) {
        x.b[0 * x.n + j] = 4096.0f;
        x.b[(x.k - 1) * x.n + j] = 4096.0f;
    }
    for (const auto& order : correct_orders()) {
        CAPTURE(order.name);
        const Verdict v = judge(x, order.dot);
        CHECK_MESSAGE(v.report.mismatches == 0, v.report.message);
    }
    // The sequential sum really does lose the small products here: off by far more than a
    // bound relative to |c_ij| would allow.
    const Verdict v = judge(x, sequential);
    const double off = std::fabs(static_cast<double>(v.got.as<float>()[0]) - v.expected.values[0]);
    CHECK(off > 1e-3 * std::fabs(v.expected.values[0]));
}

TEST_CASE("test_matmul_bound_catches_tile_index_bugs") {
    const auto p = lab_matmul::problem();
    SUBCASE("the last partial tile of k left out") {
        check_caught(generate(*p.find("m33_n17_k65"), 4), drops_last_partial_tile, 0.9);
        // One product of 4097 left out: it exceeds the bound (about 0.25 here) in about 40 %
        // of the elements.
        check_caught(generate(*p.find("m63_n65_k4097"), 4), drops_last_partial_tile, 0.3);
    }
    SUBCASE("the B tile read from the next tile's rows") {
        check_caught(generate(*p.find("m100_n101_k99"), 4), next_tile_rows_of_b, 0.9);
        check_caught(generate(*p.find("m63_n65_k4097"), 4), next_tile_rows_of_b, 0.9);
    }
    SUBCASE("the first tile of k counted twice") {
        check_caught(generate(*p.find("m33_n17_k65"), 4), first_tile_twice, 0.9);
        check_caught(generate(*p.find("m63_n65_k4097"), 4), first_tile_twice, 0.8);
    }
    SUBCASE("the last product left out") {
        check_caught(generate(*p.find("m100_n101_k99"), 4), drops_last_product, 0.9);
        check_caught(generate(*p.find("m257_n129_k1"), 4), drops_last_product, 0.99);
    }
    SUBCASE("A read as if column-major") {
        check_caught(generate(*p.find("m100_n101_k99"), 4), reads_a_column_major, 0.9);
    }
    SUBCASE("all positive inputs: a doubled tile shows in every element") {
        check_caught(generate(spec_of(40, 40, 100, 1), 4), first_tile_twice, 1.0);
        check_caught(generate(spec_of(40, 40, 100, 1), 4), drops_last_product, 0.95);
    }
}
