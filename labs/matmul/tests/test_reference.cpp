// Tests of labkit/matmul_reference.hpp's reference itself: the blocked, multi-threaded
// float64 product is the product (exactly, on inputs whose products and sums float64
// holds exactly), at sizes that cross its cache blocks and its split between threads,
// and each element's bound is dot_error_bound of its Σ|a·b|.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "labkit/generate.hpp"
#include "labkit/matmul_reference.hpp"

namespace {

// Small integers (|x| <= 8) divided by 8: every product and every sum of a few thousand
// of them is exact in float64, so the reference must give exactly the integer result.
std::vector<float> small_integers(std::size_t count, std::uint64_t stream) {
    std::vector<float> x(count);
    for (std::size_t i = 0; i < count; ++i)
        x[i] = static_cast<float>(labkit::uniform_int_at(7, stream, i, -8, 17)) / 8.0f;
    return x;
}

struct Plain {
    std::vector<double> c, sum_abs;
};

// The textbook triple loop, in float64.
Plain plain_product(const std::vector<float>& a, const std::vector<float>& b, std::uint64_t m, std::uint64_t n,
                    std::uint64_t k) {
    Plain r{std::vector<double>(m * n), std::vector<double>(m * n)};
    for (std::uint64_t i = 0; i < m; ++i)
        for (std::uint64_t j = 0; j < n; ++j) {
            double s = 0.0, s_abs = 0.0;
            for (std::uint64_t p = 0; p < k; ++p) {
                const double t = static_cast<double>(a[i * k + p]) * static_cast<double>(b[p * n + j]);
                s += t;
                s_abs += std::fabs(t);
            }
            r.c[i * n + j] = s;
            r.sum_abs[i * n + j] = s_abs;
        }
    return r;
}

void check_exact(std::uint64_t m, std::uint64_t n, std::uint64_t k) {
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(k);
    const auto a = small_integers(m * k, 1), b = small_integers(k * n, 2);
    const auto got = labkit::matmul_reference(a.data(), b.data(), m, n, k);
    const auto want = plain_product(a, b, m, n, k);
    REQUIRE(got.c.size() == m * n);
    REQUIRE(got.bound.size() == m * n);
    std::uint64_t wrong_c = 0, wrong_bound = 0;
    for (std::uint64_t e = 0; e < m * n; ++e) {
        wrong_c += got.c[e] != want.c[e];
        wrong_bound += got.bound[e] != labkit::dot_error_bound(k, want.sum_abs[e]);
    }
    CHECK(wrong_c == 0);
    CHECK(wrong_bound == 0);
}

}  // namespace

TEST_CASE("test_matmul_reference_is_exact_where_float64_is") {
    check_exact(1, 1, 1);
    check_exact(3, 5, 7);        // fewer than four rows of B: only the remainder loop
    check_exact(5, 513, 131);    // one past a block of columns (512) and of k (128), k % 4 == 3
    check_exact(2, 700, 1500);   // two rows, work enough for several threads: rows split whole
    check_exact(37, 1031, 263);  // several threads, ragged blocks everywhere
}

TEST_CASE("test_matmul_reference_agrees_with_the_triple_loop_on_random_floats") {
    const std::uint64_t m = 19, n = 600, k = 300;
    std::vector<float> a(m * k), b(k * n);
    labkit::fill_uniform(a, 3, 0, -1.0f, 1.0f);
    labkit::fill_uniform(b, 3, 1, -1.0f, 1.0f);
    const auto got = labkit::matmul_reference(a.data(), b.data(), m, n, k);
    const auto want = plain_product(a, b, m, n, k);
    std::uint64_t far = 0, low = 0;
    for (std::uint64_t e = 0; e < m * n; ++e) {
        // Both are float64 sums of the same exact products in different orders.
        far += std::fabs(got.c[e] - want.c[e]) > 1e-12 * want.sum_abs[e];
        low += got.bound[e] < labkit::dot_error_bound(k, want.sum_abs[e]) * (1 - 1e-12);
    }
    CHECK(far == 0);
    CHECK(low == 0);
}

TEST_CASE("test_matmul_dot_error_bound_is_gamma_k_of_the_products") {
    const double u = 0x1p-24;
    // k = 1: one rounded product, within half an ULP (u relative), plus the slack.
    CHECK(labkit::dot_error_bound(1, 1.0) >= u);
    CHECK(labkit::dot_error_bound(1, 1.0) <= u * (1 + 1e-6));
    // γ_k grows a little faster than k·u.
    for (std::uint64_t k : {2u, 100u, 4097u, 8192u}) {
        CAPTURE(k);
        const double bound = labkit::dot_error_bound(k, 1.0);
        CHECK(bound >= static_cast<double>(k) * u);
        CHECK(bound <= static_cast<double>(k) * u * (1 + 2 * static_cast<double>(k) * u) + 1e-11);
        CHECK(labkit::dot_error_bound(k, 2.0) > bound);
    }
    // Σ|a·b| = 0 (every product 0): only the underflow allowance, far below any float product.
    CHECK(labkit::dot_error_bound(1024, 0.0) > 0.0);
    CHECK(labkit::dot_error_bound(1024, 0.0) < 1e-40);
    CHECK_THROWS_AS(labkit::dot_error_bound(std::uint64_t{1} << 23, 1.0), std::domain_error);
}

TEST_CASE("test_matmul_sampled_reference_is_the_full_one_on_whole_rows_and_columns") {
    const std::uint64_t m = 40, n = 96, k = 33, lines = 8;
    std::vector<float> a(m * k), b(k * n);
    labkit::fill_uniform(a, 5, 0, -1.0f, 1.0f);
    labkit::fill_uniform(b, 5, 1, -1.0f, 1.0f);
    const auto full = labkit::matmul_reference(a.data(), b.data(), m, n, k);
    const auto sampled = labkit::matmul_reference_sampled(a.data(), b.data(), m, n, k, lines);
    REQUIRE(sampled.only.size() == lines * n + (m - lines) * lines);  // 8 whole rows, 8 whole columns
    REQUIRE(sampled.c.size() == sampled.only.size());
    REQUIRE(sampled.bound.size() == sampled.only.size());
    std::vector<std::uint64_t> per_row(m), per_column(n);
    for (std::size_t e = 0; e < sampled.only.size(); ++e) {
        const std::uint64_t i = sampled.only[e];
        if (e > 0) CHECK(sampled.only[e - 1] < i);  // ascending, no element twice
        // The same exact products summed in float64 in another order: far inside the bound.
        CHECK(std::fabs(sampled.c[e] - full.c[i]) <= 1e-6 * full.bound[i]);
        CHECK(sampled.bound[e] == doctest::Approx(full.bound[i]).epsilon(1e-12));
        ++per_row[i / n];
        ++per_column[i % n];
    }
    std::uint64_t whole_rows = 0, whole_columns = 0;
    for (const std::uint64_t r : per_row) {
        CHECK(r >= lines);  // every row is looked at
        whole_rows += r == n;
    }
    for (const std::uint64_t c : per_column) {
        CHECK(c >= lines);  // and every column
        whole_columns += c == m;
    }
    CHECK(whole_rows == lines);
    CHECK(whole_columns == lines);
}
