// The float64 reference of a float32 matrix product, and the bound that every element of
// a correct float32 product stays within, whatever the order of its multiply-adds and
// whether they are fused (FMA) or not. Header-only: the trusted checker and the tests of
// the labs whose kernels multiply matrices (matmul, occupancy) include it.
//
// ---- Why each element is checked against a bound of its own (handout text) ------------
//
// Every element of C = A*B is a dot product of length k: c_ij = Σ_p a_ip · b_pj. In float
// every multiplication and every addition rounds, and a GPU kernel forms the sum in an
// order of its own: tile by tile, one running sum per thread, partial sums of a split k
// added at the end, with fused multiply-adds (a*b + c rounded once) or without. The lab
// sheet's note says what that does to an exact comparison: a release build fuses the
// multiply and the add, so the GPU's answer differs from the CPU's in the last bits, and
// "fix" it with an epsilon or -fmad=false. An epsilon picked by hand is either too tight
// for large k or loose enough to let wrong answers through; this bound is neither.
//
// One operation. IEEE-754 rounds to nearest: the float result of x op y is
// (x op y)(1 + δ) with |δ| <= u = 2^-24; an FMA rounds a*b + c once.
//
// One dot product. Follow one product a_p·b_p to the result. It is rounded once when it
// is formed (not at all inside an FMA), and once more by every addition it takes part
// in. A sum of k terms in any order (a chain, a tree, tiles, a split k) is a binary tree
// with k leaves, so no term takes part in more than k - 1 additions (an addition of an
// exact 0, a padded tile's zero, rounds nothing). Each term therefore reaches the result
// multiplied by at most k factors (1 + δ), and
//     |computed - exact| <= γ_k · Σ_p |a_p · b_p|,   γ_k = k·u / (1 - k·u)
// (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., §3.1, eq. (3.5)).
// The bound holds for every order and with or without FMA; it grows with k and with the
// size of the products, not with the size of the answer, because the partial sums can
// be much larger than the final c_ij when products of both signs cancel.
//
// And a wrong one. A mistake in the tile indices (the last partial tile of k left out, a
// tile added twice, a value read from the wrong row of B or the wrong column of A) moves
// c_ij by whole products, |a_ip · b_pj| ~ 0.25 on average for inputs in [-1, 1), while
// the bound is a few units in the 5th decimal place of Σ|a·b| (k = 1023: γ_k ≈ 6.1e-5,
// Σ|a·b| ≈ 256, bound ≈ 0.016, and a correct kernel is typically off by about 1e-5).
// Of the many elements such a mistake touches, some are far outside: the check fails
// and names the first of them.
//
// The reference. Each product of two floats is exact in float64 (24 + 24 significant
// bits fit in 53), so c_ij and Σ|a·b| are sums of exact terms, computed in float64 with
// an error of at most γ_k(2^-53) · Σ|a·b| each, about 10^-9 of the float bound. That
// error, the rounding of the bound itself and of the checker's difference are added to
// the bound (the reference slack), and so is k · 2^-149 for products that would round
// below float's smallest normal number (the inputs here never come near it), so that
// the check is rigorous rather than merely close.
//
// Speed. The checker computes the reference of a timed sample of the largest bench case
// (8192^3: 5.5e11 multiply-adds, twice over, for c and for Σ|a·b|) on the CPU, so it is
// blocked for the caches and spread over every core with labkit::parallel_for_ranges.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "labkit/parallel.hpp"

namespace labkit {

// The float64 product and each element's rounding bound.
struct MatmulExpected {
    std::vector<double> c;
    std::vector<double> bound;
};

namespace matmul_detail {

inline constexpr double kFloatUnitRoundoff = 0x1p-24;
inline constexpr double kDoubleUnitRoundoff = 0x1p-53;
// The largest absolute error of a float product that lands below the smallest normal
// float (half the smallest subnormal, doubled for the roundings after it): 2^-149.
inline constexpr double kUnderflowPerProduct = 0x1p-149;
// Rounding in forming the bound and in the checker's |got - expected|, as a multiple of
// Σ|a·b| (each is below 2^-52 of it).
inline constexpr double kBoundArithmeticSlack = 0x1p-50;

// γ_k = k·u / (1 - k·u) for unit roundoff u.
inline double gamma(double k, double unit_roundoff) {
    const double ku = k * unit_roundoff;
    return ku / (1.0 - ku);
}

// The loops are blocked so that what a block of work touches stays in a core's L2 (1 MiB
// or more on current x86 servers): kBlockRows rows of C by kBlockN columns take all of k
// in steps of kBlockK. Each block is copied into contiguous buffers of the thread's own
// first (kBlockK x kBlockN of B, 256 KiB; kBlockRows x kBlockK of A, 16 KiB), and the
// running sums of c and of Σ|a·b| live in such buffers too (256 KiB together) until the
// block is done: rows of a matrix whose length is a power of two (4096, 8192) would
// otherwise all fall into the same few cache sets and evict each other. One row's
// running sums (8 KiB) stay in L1 while it passes over the block of B.
inline constexpr std::uint64_t kBlockRows = 32;
inline constexpr std::uint64_t kBlockK = 128;
inline constexpr std::uint64_t kBlockN = 512;

struct Job {
    const float* a;
    const float* b;
    double* c;
    double* sum_abs;
    std::uint64_t m, n, k;
};

// c[j] += Σ_p a_row[p] · b_rows[p][j] and s[j] += Σ_p |a_row[p] · b_rows[p][j]| for
// p < depth, j < width (b_rows: depth rows of `width` floats). Where the compiler can, it
// is also built for AVX2, chosen at run time on a CPU that has it (about 2.5 times
// faster than the baseline x86-64 build), with the same float64 results: the order of
// the additions is the source's in both.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__CUDACC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
inline void accumulate_row(double* __restrict c, double* __restrict s, const float* __restrict a_row,
                           const float* __restrict b_rows, std::uint64_t depth, std::uint64_t width) {
    std::uint64_t p = 0;
    // Four rows of B at a time: each running sum is loaded and stored once per four
    // products (the order of float64 additions does not matter here).
    for (; p + 4 <= depth; p += 4) {
        const double a0 = a_row[p], a1 = a_row[p + 1], a2 = a_row[p + 2], a3 = a_row[p + 3];
        const double m0 = std::fabs(a0), m1 = std::fabs(a1), m2 = std::fabs(a2), m3 = std::fabs(a3);
        const float* __restrict b0 = b_rows + p * width;
        const float* __restrict b1 = b0 + width;
        const float* __restrict b2 = b1 + width;
        const float* __restrict b3 = b2 + width;
        for (std::uint64_t j = 0; j < width; ++j) {
            const double x0 = b0[j], x1 = b1[j], x2 = b2[j], x3 = b3[j];
            c[j] += (a0 * x0 + a1 * x1) + (a2 * x2 + a3 * x3);
            s[j] += (m0 * std::fabs(x0) + m1 * std::fabs(x1)) + (m2 * std::fabs(x2) + m3 * std::fabs(x3));
        }
    }
    for (; p < depth; ++p) {
        const double ap = a_row[p], mp = std::fabs(ap);
        const float* __restrict bp = b_rows + p * width;
        for (std::uint64_t j = 0; j < width; ++j) {
            const double x = bp[j];
            c[j] += ap * x;
            s[j] += mp * std::fabs(x);
        }
    }
}

// Rows [row_begin, row_end) of C and of Σ|a·b|.
inline void reference_rows(const Job& job, std::uint64_t row_begin, std::uint64_t row_end) {
    const std::uint64_t n = job.n, k = job.k;
    std::vector<float> a_block(kBlockRows * kBlockK), b_block(kBlockK * kBlockN);
    std::vector<double> c_block(kBlockRows * kBlockN), s_block(kBlockRows * kBlockN);
    for (std::uint64_t j0 = 0; j0 < n; j0 += kBlockN) {
        const std::uint64_t width = std::min(kBlockN, n - j0);
        for (std::uint64_t i0 = row_begin; i0 < row_end; i0 += kBlockRows) {
            const std::uint64_t rows = std::min(kBlockRows, row_end - i0);
            std::fill(c_block.begin(), c_block.end(), 0.0);
            std::fill(s_block.begin(), s_block.end(), 0.0);
            for (std::uint64_t p0 = 0; p0 < k; p0 += kBlockK) {
                const std::uint64_t depth = std::min(kBlockK, k - p0);
                for (std::uint64_t p = 0; p < depth; ++p)
                    std::copy_n(job.b + (p0 + p) * n + j0, width, b_block.data() + p * width);
                for (std::uint64_t r = 0; r < rows; ++r)
                    std::copy_n(job.a + (i0 + r) * k + p0, depth, a_block.data() + r * depth);
                for (std::uint64_t r = 0; r < rows; ++r)
                    accumulate_row(c_block.data() + r * width, s_block.data() + r * width, a_block.data() + r * depth,
                                   b_block.data(), depth, width);
            }
            for (std::uint64_t r = 0; r < rows; ++r) {
                std::copy_n(c_block.data() + r * width, width, job.c + (i0 + r) * n + j0);
                std::copy_n(s_block.data() + r * width, width, job.sum_abs + (i0 + r) * n + j0);
            }
        }
    }
}

}  // namespace matmul_detail

// γ_k · sum_abs: the bound on a length-k float32 dot product's error, any order, FMA or
// not (see above), plus the reference slack. sum_abs_products is Σ_p |a_p · b_p| as the
// float64 reference computes it. k < 2^23 (beyond, γ_k says nothing useful).
inline double dot_error_bound(std::uint64_t k, double sum_abs_products) {
    if (k >= (std::uint64_t{1} << 23))
        throw std::domain_error("dot_error_bound: a float dot product of 2^23 terms or more has no useful bound");
    const double terms = static_cast<double>(k);
    const double float_gamma = matmul_detail::gamma(terms, matmul_detail::kFloatUnitRoundoff);
    // The reference's own error in c and in Σ|a·b| (γ_k of float64 each), and the
    // arithmetic of the bound and of the comparison.
    const double reference_slack =
        2.0 * matmul_detail::gamma(terms, matmul_detail::kDoubleUnitRoundoff) + matmul_detail::kBoundArithmeticSlack;
    return (float_gamma + reference_slack) * sum_abs_products + terms * matmul_detail::kUnderflowPerProduct;
}

// C = A*B (row-major; A m x k, B k x n) in float64 with each element's bound; blocked for
// cache and spread over all cores (labkit::parallel_for_ranges), so 4096^3 takes seconds,
// not minutes.
inline MatmulExpected matmul_reference(const float* a, const float* b, std::uint64_t m, std::uint64_t n,
                                       std::uint64_t k) {
    (void)dot_error_bound(k, 0.0);  // a k without a bound fails here, not in a worker thread
    MatmulExpected out;
    out.c.assign(m * n, 0.0);
    out.bound.assign(m * n, 0.0);  // Σ|a·b| first, the bound at the end
    const matmul_detail::Job job{a, b, out.c.data(), out.bound.data(), m, n, k};
    const std::uint64_t work_per_row = std::max<std::uint64_t>(1, n * k);
    // The work is counted in multiply-adds, so that parallel_for_ranges (a thread per 2^20
    // units, at most one per core and labkit::kMaxWorkerThreads in all) keeps a small case
    // on one thread and spreads a large one over the cores; each row goes, whole, to the
    // range that holds its first unit.
    struct Context {
        const matmul_detail::Job* job;
        std::uint64_t work_per_row;
    } context{&job, work_per_row};
    parallel_for_ranges(
        static_cast<std::size_t>(m * work_per_row),
        [](std::size_t begin, std::size_t end, void* p) {
            const auto& ctx = *static_cast<const Context*>(p);
            const std::uint64_t first_row = (begin + ctx.work_per_row - 1) / ctx.work_per_row;
            const std::uint64_t end_row = (end + ctx.work_per_row - 1) / ctx.work_per_row;
            if (first_row >= end_row) return;
            matmul_detail::reference_rows(*ctx.job, first_row, end_row);
            const std::uint64_t n_cols = ctx.job->n;
            for (std::uint64_t e = first_row * n_cols; e < end_row * n_cols; ++e)
                ctx.job->sum_abs[e] = dot_error_bound(ctx.job->k, ctx.job->sum_abs[e]);
        },
        &context);
    return out;
}

// The same for a product too large to compute in full on the checker's CPU: only the
// elements `only` lists (flat indices into C, ascending), each a float64 dot product with
// its bound: `c` and `bound` have one entry per listed element (labkit::Expected::only).
// The samples are `lines` whole rows of C and `lines` whole columns, evenly spread: every
// row and every column of C is looked at, and every band of rows or columns wider than
// m / lines or n / lines holds a whole sampled line, so a wrong tile of A or of B is seen.
// Rows stream B and columns stream A, each contiguously, so the work (lines * (m + n) * k
// multiply-adds: 8.6e9 for 8192^3 and 64 lines) takes seconds on all cores.
struct SampledMatmulExpected {
    std::vector<std::uint64_t> only;
    std::vector<double> c;
    std::vector<double> bound;
};

inline SampledMatmulExpected matmul_reference_sampled(const float* a, const float* b, std::uint64_t m,
                                                      std::uint64_t n, std::uint64_t k, std::uint64_t lines) {
    (void)dot_error_bound(k, 0.0);
    auto spread = [](std::uint64_t extent, std::uint64_t count) {
        std::vector<std::uint64_t> picked;
        count = std::max<std::uint64_t>(1, std::min(count, extent));
        for (std::uint64_t t = 0; t < count; ++t) picked.push_back(t * extent / count + extent / count / 2);
        picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
        return picked;
    };
    const std::vector<std::uint64_t> rows = spread(m, lines), columns = spread(n, lines);
    // Whole sampled rows: row_c[r * n + j], and the sampled columns of every row: column_c[i * J + t].
    std::vector<double> row_c(rows.size() * n), row_s(rows.size() * n);
    std::vector<double> column_c(m * columns.size()), column_s(m * columns.size());
    std::vector<float> b_columns(k * columns.size());  // B's sampled columns, k-major
    for (std::uint64_t q = 0; q < k; ++q)
        for (std::size_t t = 0; t < columns.size(); ++t) b_columns[q * columns.size() + t] = b[q * n + columns[t]];
    struct Context {
        const float* a;
        const float* b;
        std::uint64_t n, k;
        const std::vector<std::uint64_t>* rows;
        std::size_t width;  // sampled columns
        const float* b_columns;
        double *row_c, *row_s, *column_c, *column_s;
    } context{a, b, n, k, &rows, columns.size(), b_columns.data(),
              row_c.data(), row_s.data(), column_c.data(), column_s.data()};
    // Work items: first one per sampled row, then one per row of C (its sampled columns).
    parallel_for_ranges(
        rows.size() + m,
        [](std::size_t begin, std::size_t end, void* p) {
            const auto& ctx = *static_cast<const Context*>(p);
            for (std::size_t item = begin; item < end; ++item) {
                // Both are a row of A times a k x width block of floats stored row after row:
                // all of B for a sampled row, B's sampled columns for every row.
                if (item < ctx.rows->size())
                    matmul_detail::accumulate_row(ctx.row_c + item * ctx.n, ctx.row_s + item * ctx.n,
                                                  ctx.a + (*ctx.rows)[item] * ctx.k, ctx.b, ctx.k, ctx.n);
                else
                    matmul_detail::accumulate_row(ctx.column_c + (item - ctx.rows->size()) * ctx.width,
                                                  ctx.column_s + (item - ctx.rows->size()) * ctx.width,
                                                  ctx.a + (item - ctx.rows->size()) * ctx.k, ctx.b_columns, ctx.k,
                                                  ctx.width);
            }
        },
        &context);
    SampledMatmulExpected out;
    std::size_t next_row = 0;
    for (std::uint64_t i = 0; i < m; ++i) {
        if (next_row < rows.size() && rows[next_row] == i) {  // a sampled row: all of it
            for (std::uint64_t j = 0; j < n; ++j) {
                out.only.push_back(i * n + j);
                out.c.push_back(row_c[next_row * n + j]);
                out.bound.push_back(dot_error_bound(k, row_s[next_row * n + j]));
            }
            ++next_row;
            continue;
        }
        for (std::size_t t = 0; t < columns.size(); ++t) {
            out.only.push_back(i * n + columns[t]);
            out.c.push_back(column_c[i * columns.size() + t]);
            out.bound.push_back(dot_error_bound(k, column_s[i * columns.size() + t]));
        }
    }
    return out;
}

}  // namespace labkit
