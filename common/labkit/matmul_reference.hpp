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
// ---- Lower precision: why the whole product is tested too (handout text) --------------
//
// The bound is a worst case: it holds for every order of every input, so it is loose.
// For the lab's inputs a correct kernel lands about 10^3 to 10^4 times inside it at
// k = 4096, and that leaves room for arithmetic less precise than float. A kernel on
// tensor cores in TF32 (what precision::tf32 in wmma, mma.sync or cuBLAS's TF32 mode
// does) rounds A and B to 10 bits of mantissa (float has 23) before multiplying, then
// adds in float; bf16 keeps 7 bits, fp16 10 (and a narrower range). At k = 4096 such a
// product is off by about 100 u of Σ|a·b| per element (below), its largest errors about
// 500 u, while the bound is about 4096 u: every element passes. Element by element, lower
// precision stays hidden for k beyond about 1000 (TF32, fp16) or 3000 (bf16).
//
// Taken together the elements show it. Let e_ij = (c_ij - exact_ij) / s_ij with
// s_ij = Σ_p |a_ip·b_pj|, and E = the root mean square of e over the checked elements
// (the 64 sampled rows and columns of the bench cases, every element of the others).
// What float gives for E follows from a model in which every rounding is an independent
// δ ~ U(-u, u) (mean 0, E[δ²] = u²/3): rounding errors of different operations have no
// reason to be aligned, and with random inputs they are not.
//
//   One running sum (a thread's `sum += a*b` over all of k: the naive and the tiled kernel
//   alike). Addition p rounds the partial sum s_p = t_1 + ... + t_p (t_p = a_p·b_p), and
//   without FMA each product is rounded as well, so to first order
//       c - exact = Σ_{p>=2} δ_p s_p + Σ_p δ'_p t_p,  E[(c - exact)²] = (u²/3)(Σ s_p² + Σ t_p²).
//   For independent terms of mean μ and variance σ², E[s_p²] = p σ² + p² μ², so
//   Σ_p s_p² ≈ k² σ²/2 + k³ μ²/3, and with s ≈ k·m (m = E|t|):
//       E[e²] ≈ (u²/3) (σ²/(2m²) + k μ²/(3m²) + E[t²]/(k m²)),
//   the last term only without FMA. The lab's inputs are uniform in [-1, 1): μ = 0,
//   E[t²] = σ² = 1/9, m = 1/4, so E ≈ u·sqrt(8/27) ≈ 0.54 u at every k, FMA or not: the
//   partial sums of sign-symmetric products grow like a random walk, |s_p| ~ sqrt(p/9),
//   and k roundings of them add up, again like a random walk, to (u/sqrt(3))·sqrt(k²/18),
//   which grows like k, as s does. In the all-positive case (uniform in [0, 1):
//   μ = m = 1/4, σ² = 7/144) the partial sums grow like p/4 and
//   E ≈ u·sqrt((7/18 + k/3)/3): 10.7 u at its k = 1024.
//   Every other order keeps its partial sums shorter and is smaller: tiles of T with a
//   partial sum each, E ≈ 0.54 u·sqrt(T/k + 1/T) (0.11 u for T = 32 at k = 4096); k split
//   into S parts added at the end, 0.54 u / sqrt(S); a pairwise tree, 0.54 u·sqrt(2 log2(k)/k).
//
//   Lower precision. Rounding each input to p significant bits (TF32 and fp16: p = 11,
//   bf16: p = 8) multiplies a_p and b_p by (1 + α_p), (1 + β_p), |α|, |β| <= 2^-p, in
//   every order alike; the products of two such numbers are exact in float (2p <= 24
//   bits), the float additions add their own error on top. So
//       c - exact ≈ Σ_p t_p (α_p + β_p),  E[e²] ≈ k E[t²] (2·2^-2p/3) / (k m)² = (32/27) 2^-2p / k
//   for either of the lab's distributions: E ≈ 1.09·2^-p / sqrt(k), that is
//   8900 u / sqrt(k) for TF32 and fp16 (139 u at k = 4096, 98 u at k = 8192) and eight
//   times that for bf16. It falls only as 1/sqrt(k), while float's stays flat.
//
// Real rounding is not uniform on (-u, u): a value spread evenly over a binade is rounded
// by about 0.71 of what the model says (E[δ²] = u²/6 instead of u²/3), and the measured
// figures are about 0.7 of the model's: one running sum 0.38 to 0.41 u, 7.1 u for the
// all-positive k = 1024; TF32 87 u at k = 4096, 63 u at k = 8192, 177 u all-positive at
// k = 1024; bf16 720 u at k = 4096.
//
// The limit. The model for one running sum, with μ/m estimated from the data as each
// element's coherence ρ_ij = c_ij / s_ij (0 when its products cancel, ±1 when they all
// share a sign) and the rest (σ²/(2m²), and the products' own rounding) taken as 1:
//     E <= kRmsMargin · u · sqrt((1 + k·mean(ρ²)/3) / 3),   kRmsMargin = 4.
// For mixed signs ρ² ≈ 16/(9k) and the limit is about 2.9 u at every k; for the
// all-positive case it is about 43 u at k = 1024. Measured against it on the lab's own
// inputs, at every k of its cases and bench cases (tests/test_precision.cpp prints the
// ratios, and so do occupancy's tests): every float order stays below 0.17 of it, a
// margin of 6 or more, one running sum being the worst (at k = 1, one rounded product,
// off by at most u, below 0.375 of it whatever the inputs); TF32 is 30 times over it at
// k = 4096, 22 times at 8192 and 4.1 times in the all-positive k = 1024 case, where the
// running sum's own error is largest; bf16 eight times further; fp16 like TF32. Below
// k = 1000 the bound of single elements already fails all three.
//
// What makes lower precision visible is the inputs: uniform floats with full 24-bit
// mantissas (the generator rounds a 53-bit uniform double to float), so rounding them to
// 10 or 7 bits changes nearly every one (all but about 1 in 8192 for TF32). Inputs
// already exact in TF32 (small integers, or eighths, as some course materials use) would
// let TF32 through unseen, and so would same-sign inputs at a much larger k: there a
// running sum's own error, sqrt(k/9) u, grows past what rounding the inputs adds, and the
// two cannot be told apart (TF32 passes the limit for all-positive inputs from about
// k = 4500). No case of the lab is either: the all-positive case has k = 1024, the bench
// cases mixed signs. And the test assumes the lab's random inputs: on inputs built to
// round badly (one product 2^24 times the others, tests/test_bound.cpp) a correct order
// can exceed it, which is why it is a test of the lab's cases, not a bound.
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
#include <string>
#include <utility>
#include <vector>

#include "labkit/compare.hpp"
#include "labkit/parallel.hpp"

namespace labkit {

// The float64 product and each element's rounding bound.
struct MatmulExpected {
    std::vector<double> c;
    std::vector<double> bound;
    // The mean over the elements of ρ² = (c_ij / Σ_p |a_ip·b_pj|)²: how far the products of
    // a dot product share a sign (0 where they cancel, 1 where they all agree), which the
    // limit on the root mean square error depends on (see above).
    double mean_square_coherence = 0.0;
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
// How many times the random-rounding model's root mean square error of one running sum
// the test of the whole product allows (see above).
inline constexpr double kRmsMargin = 4.0;

// γ_k = k·u / (1 - k·u) for unit roundoff u.
inline double gamma(double k, double unit_roundoff) {
    const double ku = k * unit_roundoff;
    return ku / (1.0 - ku);
}

// dot_error_bound's factor of Σ|a·b|: γ_k of float, and the reference's own error in c
// and in Σ|a·b| (γ_k of float64 each) with the arithmetic of the bound and of the
// comparison. The bound is this times Σ|a·b| plus an underflow term that the lab's inputs
// never come near, so an error as a fraction of its bound is e_ij divided by it.
inline double bound_per_sum_abs(std::uint64_t k) {
    const double terms = static_cast<double>(k);
    return gamma(terms, kFloatUnitRoundoff) + (2.0 * gamma(terms, kDoubleUnitRoundoff) + kBoundArithmeticSlack);
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
    return matmul_detail::bound_per_sum_abs(k) * sum_abs_products +
           static_cast<double>(k) * matmul_detail::kUnderflowPerProduct;
}

// The largest root mean square of e_ij = (c_ij - exact_ij) / Σ_p |a_ip·b_pj| over the
// checked elements that float multiply-adds are allowed, for dot products of length k
// whose coherence ρ_ij = c_ij / Σ_p |a_ip·b_pj| has the mean square given (see above):
// kRmsMargin · u · sqrt((1 + k·mean(ρ²)/3) / 3).
inline double rms_relative_error_limit(std::uint64_t k, double mean_square_coherence) {
    const double terms = static_cast<double>(k);
    return matmul_detail::kRmsMargin * matmul_detail::kFloatUnitRoundoff *
           std::sqrt((1.0 + terms * mean_square_coherence / 3.0) / 3.0);
}

namespace matmul_detail {

// (c / Σ|a·b|)², 0 where every product is 0.
inline double coherence_squared(double c, double sum_abs) {
    if (!(sum_abs > 0)) return 0.0;
    const double rho = c / sum_abs;
    return rho * rho;
}

// The test of the whole product on an Expected of C: its limit as a fraction of the
// bound (what Expected::rms_limit holds), and the words a student reads when it fails.
inline void add_rms_test(Expected& expected, std::uint64_t k, double mean_square_coherence) {
    const double per_bound = bound_per_sum_abs(k);
    expected.rms_limit = rms_relative_error_limit(k, mean_square_coherence) / per_bound;
    expected.rms_explain = [k, per_bound](double rms, double limit) {
        const double measured = rms * per_bound, allowed = limit * per_bound;
        const auto in_u = [](double e) { return format_value(std::round(e / kFloatUnitRoundoff * 10.0) / 10.0); };
        return "taken together they are off by far more than float arithmetic is: the root mean square of "
               "(c_ij - exact) / sum_p |a_ip * b_pj| over these elements is " +
               format_value(measured) + " (" + in_u(measured) + " u, u = 2^-24), and float32 multiply-adds in any "
               "order, fused or not, stay below " + format_value(allowed) + " (" + in_u(allowed) +
               " u) for dot products of length k = " + std::to_string(k) +
               " with these inputs. Errors that large, spread over every element, are what rounding A and B to "
               "fewer bits gives: the products look computed in lower precision, such as TF32, bf16 or fp16 on "
               "tensor cores (wmma or mma with precision::tf32 or half inputs, which keep 10 or 7 of float's 23 "
               "mantissa bits), while this lab asks for float32 multiply-adds. Keep A and B in float and "
               "multiply-add in float (FFMA), in any order.";
    };
}

}  // namespace matmul_detail

// C = A*B (row-major; A m x k, B k x n) in float64 with each element's bound; blocked for
// cache and spread over all cores (labkit::parallel_for_ranges), so 4096^3 takes seconds,
// not minutes.
inline MatmulExpected matmul_reference(const float* a, const float* b, std::uint64_t m, std::uint64_t n,
                                       std::uint64_t k) {
    (void)dot_error_bound(k, 0.0);  // a k without a bound fails here, not in a worker thread
    MatmulExpected out;
    out.c.assign(m * n, 0.0);
    out.bound.assign(m * n, 0.0);  // Σ|a·b| first, the bound at the end
    // Each row's Σ_j ρ_ij², added up in row order afterwards, so that the mean is the same
    // however the rows were spread over threads.
    std::vector<double> row_coherence(m, 0.0);
    const matmul_detail::Job job{a, b, out.c.data(), out.bound.data(), m, n, k};
    const std::uint64_t work_per_row = std::max<std::uint64_t>(1, n * k);
    // The work is counted in multiply-adds, so that parallel_for_ranges (a thread per 2^20
    // units, at most one per core and labkit::kMaxWorkerThreads in all) keeps a small case
    // on one thread and spreads a large one over the cores; each row goes, whole, to the
    // range that holds its first unit.
    struct Context {
        const matmul_detail::Job* job;
        std::uint64_t work_per_row;
        double* row_coherence;
    } context{&job, work_per_row, row_coherence.data()};
    parallel_for_ranges(
        static_cast<std::size_t>(m * work_per_row),
        [](std::size_t begin, std::size_t end, void* p) {
            const auto& ctx = *static_cast<const Context*>(p);
            const std::uint64_t first_row = (begin + ctx.work_per_row - 1) / ctx.work_per_row;
            const std::uint64_t end_row = (end + ctx.work_per_row - 1) / ctx.work_per_row;
            if (first_row >= end_row) return;
            matmul_detail::reference_rows(*ctx.job, first_row, end_row);
            const std::uint64_t n_cols = ctx.job->n;
            for (std::uint64_t row = first_row; row < end_row; ++row)
                for (std::uint64_t e = row * n_cols; e < (row + 1) * n_cols; ++e) {
                    ctx.row_coherence[row] += matmul_detail::coherence_squared(ctx.job->c[e], ctx.job->sum_abs[e]);
                    ctx.job->sum_abs[e] = dot_error_bound(ctx.job->k, ctx.job->sum_abs[e]);
                }
        },
        &context);
    double coherence = 0.0;
    for (const double row : row_coherence) coherence += row;
    out.mean_square_coherence = m * n > 0 ? coherence / static_cast<double>(m * n) : 0.0;
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
    double mean_square_coherence = 0.0;  // over the sampled elements
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
    double coherence = 0.0;
    const auto add = [&](std::uint64_t index, double c, double sum_abs) {
        out.only.push_back(index);
        out.c.push_back(c);
        out.bound.push_back(dot_error_bound(k, sum_abs));
        coherence += matmul_detail::coherence_squared(c, sum_abs);
    };
    std::size_t next_row = 0;
    for (std::uint64_t i = 0; i < m; ++i) {
        if (next_row < rows.size() && rows[next_row] == i) {  // a sampled row: all of it
            for (std::uint64_t j = 0; j < n; ++j) add(i * n + j, row_c[next_row * n + j], row_s[next_row * n + j]);
            ++next_row;
            continue;
        }
        for (std::size_t t = 0; t < columns.size(); ++t)
            add(i * n + columns[t], column_c[i * columns.size() + t], column_s[i * columns.size() + t]);
    }
    out.mean_square_coherence = out.only.empty() ? 0.0 : coherence / static_cast<double>(out.only.size());
    return out;
}

// The checker's Expected for C (named `name`: "c", or another output of a lab whose
// kernels multiply matrices): the float64 product, each element's bound, and the test of
// the whole product with its limit for this k and these inputs (see above). Any order of
// the multiply-adds is allowed, so a correct answer may change from run to run (a split
// k added up with atomics); the spread then counts against the bound.
inline Expected matmul_expected(std::string name, std::uint64_t m, std::uint64_t n, std::uint64_t k,
                                MatmulExpected product) {
    Expected expected{std::move(name), {m, n}, std::move(product.c), std::move(product.bound), {}, {},
                      /*fixed_order=*/false};
    matmul_detail::add_rms_test(expected, k, product.mean_square_coherence);
    return expected;
}

inline Expected matmul_expected(std::string name, std::uint64_t m, std::uint64_t n, std::uint64_t k,
                                SampledMatmulExpected sampled) {
    Expected expected{std::move(name), {m, n}, std::move(sampled.c), std::move(sampled.bound), {}, {},
                      /*fixed_order=*/false};
    expected.only = std::move(sampled.only);
    matmul_detail::add_rms_test(expected, k, sampled.mean_square_coherence);
    return expected;
}

}  // namespace labkit
