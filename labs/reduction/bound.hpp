// The tolerance of lab reduction: how far a correct float sum may lie from the exact
// sum, derived from how floating-point addition rounds (lecture 9), and the float64
// reference it is measured against. Pure C++17 and header-only: the trusted checker's
// reference and the tests include it.
//
// ---- Why the answer is checked against a bound (handout text) ---------------------
//
// A float sum cannot be checked for equality: addition in floating point is not
// associative, so every order of summation gives a slightly different answer, and the
// parallel orders of lecture 3 differ from the sequential loop on the CPU. Instead the
// checker asks: is the answer as close to the exact sum as the mathematics guarantees
// for ANY correct summation tree? A wrong answer (an element dropped or counted twice,
// a block left out) is far outside that; a correct one never is.
//
// One addition. IEEE-754 rounds to nearest (lecture 9: within half an ULP), so the
// float result of a + b is (a + b)(1 + δ) with |δ| <= u = 2^-24 for float.
//
// A whole sum. Follow one input x_i from where it is read to the final result: it takes
// part in d_i additions, and each multiplies its contribution by its own (1 + δ). So
//     computed = Σ x_i (1 + θ_i),   |θ_i| <= (1 + u)^d_i - 1 <= γ(d_i) = d_i·u / (1 - d_i·u)
// and, with d the largest d_i (the depth of the summation tree),
//     |computed - exact| <= γ(d) · Σ|x_i|.
// (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., Lemma 3.1 and
// §4.2.) An addition in which one side is padding (a 0.0f that stands for no element)
// is exact and does not count. Two consequences:
//   * The bound grows with d. A sequential loop has d = n - 1: the error grows linearly
//     with n, which is lecture 9's "1000 + 10,000 × 0.1 = 1000". Every tree of lecture 3
//     halves the number of partial sums at each level, so d = ceil(log2 n): the error
//     grows only with log2(n). This is why the tolerance grows with log2(n).
//   * The bound is a multiple of Σ|x_i|, not of |Σ x_i|. Each rounding error is a
//     fraction of a partial sum, and partial sums can be large while the total is small:
//     with +10^6 and -10^6 among the inputs (cancellation), adding 0.1 to a partial sum
//     near 10^6 rounds by up to 1/32 (half an ULP there), and once the two large values
//     cancel, that rounding may be larger than the whole answer. A tolerance relative
//     to the answer would fail correct programs.
//
// The contract. A submission may chain at most kMaxSerialChain additions into one
// accumulator (a per-thread loop `acc += ...`), and must combine everything else in a
// tree (shared-memory trees, warp shuffles, partial sums of blocks). Then
//     d <= kMaxSerialChain + ceil(log2 n) + kCombineSlack,
// because a chain of c additions replaces log2(c) levels of a tree (so it costs at most
// c - log2(c) extra), and kCombineSlack covers the rest: trees over counts that are not
// powers of two (each level can round log2 up), and a short loop of a few values per
// thread when the last block (or a last pass) adds up the partial sums of all blocks.
// No order of n numbers needs more than n - 1 additions, so d is also capped at n - 1
// (but kept at least 2, the bound of Kahan's compensated summation, lecture 9, which a
// submission may use). The tolerance is then γ(d) · Σ|x_i|.
//
// kMaxSerialChain = 64. Long enough for a fast kernel: at n = 2^28 on a 132-SM GPU,
// a resident grid of 1056 blocks × 256 threads reading 16 floats per thread per loop
// iteration loops at most 63 times (the solution, replayed addition for addition in
// tests/test_bound.cpp, reaches d = 85 of the 100 allowed there). Short enough to stay tight: at n = 2^20 the
// tolerance is γ(92)·Σ|x| ≈ 5.5e-6·Σ|x|, so for 2^20 uniform [0, 1) inputs (Σ|x| ≈
// 5·10^5) it is about 3, while dropping one 256-element block moves the sum by about 128.
// A thread that loops over its 1000 elements with a single accumulator is outside the
// contract (such errors are usually still small, but no longer guaranteed), and so is
// an atomicAdd of every block's sum into the result (a chain as long as the grid).
//
// The reference. Σ x_i is computed in float64 with Kahan's compensated summation
// (lecture 9), in index order 0, 1, ..., n-1. The inputs are floats and therefore exact
// in float64; the reference's own error is at most (2·2^-53 + O(n·2^-106))·Σ|x_i|,
// more than 10^9 times smaller than the tolerance. It is added to the tolerance anyway
// (kReferenceSlack), so the check is rigorous and not merely "close enough".
//
// Assumed: round to nearest and no overflow (every |partial sum| < 2^128), as in CUDA's
// default float addition; the lab's inputs are far from both edges.
//
// ---- Lower precision: the size of the error itself (handout text) ------------------
//
// The bound is a worst case, so it leaves room for a sum less precise than float: one
// that converts every element to bf16 (7 explicit mantissa bits) or fp16 (10) before
// adding them in float, as packed half-precision arithmetic or tensor cores would. Each
// element is then off by a relative α_i, |α_i| <= 2^-p (p = 8 or 11 significant bits),
// in whatever order it is added, and the sum by Σ x_i α_i: with the rounding errors
// independent and uniform on (-2^-p, 2^-p), a root mean square of 2^-p·sqrt(Σx²/3). For
// 2^20 elements uniform in [-1, 1) that is 1.3 for bf16 and 0.17 for fp16, against a
// bound of 2.9; the bound grows like n and this error like sqrt(n), so from about
// n = 2^20 (bf16) or 2^14 (fp16) on such a sum passes the bound nearly always
// (tests/test_precision.cpp shows it at every bench size).
//
// So the error itself is measured too, against what float trees give. In a model where
// every rounding is an independent δ ~ U(-u, u), a tree's error is Σ_v δ_v s_v over its
// additions v, s_v the exact partial sum formed there, with mean square (u²/3)·Σ_v s_v².
// Split each s_v into |v| times the mean x̄ = Σx/n (|v| the elements below v) and the
// rest: the rest is a sum of |v| independent deviations, E[.²] <= |v|·Σx²/n, and since
// Σ_v |v| = Σ_i (additions element i goes through) <= n·d, it gives at most d·Σx². The
// mean part, |v|²·x̄² summed over the tree, is largest when the contract's chain of 64
// additions sits at the top, its partial sums j/64 of the whole: Σ_j (j/64)² (Σx)² ≈
// (64/3)·(Σx)², and the levels below add at most 2·(Σx)². So a contract tree's error has
// a root mean square of at most
//     (u/sqrt(3))·sqrt(d·Σx² + (64/3 + 2)·(Σx)²).
// For 2^26 elements uniform in [-1, 1) (the timed case), where (Σx)² is about Σx², that
// is 1.8e-3 (9e-4 u of Σ|x|), against 10.7 (bf16) and 1.3 (fp16) for lower precision:
// 6000 and 750 times as much, and the same at every n, because when signs are mixed
// both grow like sqrt(n).
//
// One thing the model leaves out: an element so large that adding small ones to the sum
// that holds it rounds them away, every time in the same direction (the hard case: 2^24,
// then values below 1, which a sum near 2^24 loses). Each such addition is off by at
// most about u·max|x|, and at most d of them lie on the large element's path:
// d·u·max|x|, added as it is. The limit on |computed - exact| is then
//     kRmsMargin·(u/sqrt(3))·sqrt(d·Σx² + (64/3 + 2)·(Σx)²) + d·u·max|x|,   kRmsMargin = 6.
// Measured on the lab's own inputs at every case and bench size (tests/test_precision.cpp
// prints each) and on the tests' replays of every solution, float orders of the contract
// stay below 0.18 of it where signs are mixed and below 0.26 in the hard cases, whose
// limit is mostly the allowance for the large element.
//
// Where it can tell lower precision from float, and where it cannot. Elements of mixed
// signs (every bench case, and the dist = 0 cases) cancel, so float's own error stays
// small: there lower precision is about 100 (fp16) to 1000 (bf16) times the limit, and a
// sum converted to fp16 slips under it only when its error happens to be that small,
// about 1 time in 100 (bf16: 1 in 1000) for each case judged. Elements of one sign
// (dist = 2) do not cancel: float's own error grows like n, lower precision's like
// sqrt(n), and the limit, which must leave room for float's, lets bf16 through from about
// n = 2^22 and fp16 from 2^16 (the case of 2^26 + 3 positive elements passes either
// way). In the hard cases (dist = 1) the large element sets both the bound and the limit,
// and bf16 passes both; fp16 cannot hold 2^24 (its largest value is 65504) and fails them.
// A sum is one number: no test of it can do better than this.
#pragma once

#include <cmath>
#include <cstddef>

namespace reduction {

// Unit roundoff of float: half the distance from 1.0f to the next float.
inline constexpr double kUnitRoundoff = 0x1p-24;

// The most additions a submission may chain into one accumulator (see above).
inline constexpr std::size_t kMaxSerialChain = 64;

// Levels the contract allows beyond kMaxSerialChain + ceil(log2 n) (see above).
inline constexpr std::size_t kCombineSlack = 8;

// A multiple of Σ|x_i| that covers the float64 reference's own error and the rounding
// of the tolerance and of the difference computed here (each below 2^-50·Σ|x_i| for
// any n this lab can hold in memory).
inline constexpr double kReferenceSlack = 0x1p-48;

// The smallest k with 2^k >= n (0 for n <= 1).
constexpr std::size_t ceil_log2(std::size_t n) {
    std::size_t k = 0;
    while (k < 8 * sizeof(std::size_t) && (std::size_t{1} << k) < n) ++k;
    return k;
}

// The deepest summation tree the contract allows for n elements: the most additions
// any one element may take part in on its way to the result.
constexpr std::size_t max_addition_depth(std::size_t n) {
    const std::size_t contract = kMaxSerialChain + ceil_log2(n) + kCombineSlack;
    const std::size_t any_order = n > 3 ? n - 1 : 2;  // no tree over n leaves is deeper than n - 1
    return contract < any_order ? contract : any_order;
}

// γ(d) = d·u / (1 - d·u): the largest relative error of a value that went through d
// float additions.
constexpr double gamma(std::size_t d) {
    const double du = static_cast<double>(d) * kUnitRoundoff;
    return du / (1.0 - du);
}

// The largest |computed - exact| a correct float sum of n elements may have, given
// sum_abs = Σ|x_i| (from reference_sum_abs).
inline double reduction_error_bound(std::size_t n, double sum_abs) {
    return (gamma(max_addition_depth(n)) + kReferenceSlack) * sum_abs;
}

// ---- Near misses ---------------------------------------------------------------------
// The commonest reduction outside the contract adds every block's partial sum into one
// float with atomicAdd: a chain as long as the grid. For the verdict to teach, a result
// outside the bound but within what such a chain can reach is a near miss, explained in
// words. The chain this allows for: one addition per block of kNearMissBlock elements
// (the grid of a one-element-per-thread kernel), on top of the contract's tree.
inline constexpr std::size_t kNearMissBlock = 256;

// The largest |computed - exact| of a sum of n elements that chains one addition per
// block of kNearMissBlock elements (atomicAdd of every block's sum, or one thread
// looping over thousands of elements). Never below the contract's bound.
inline double long_chain_error_bound(std::size_t n, double sum_abs) {
    const std::size_t chain = (n + kNearMissBlock - 1) / kNearMissBlock + ceil_log2(n) + kCombineSlack;
    const std::size_t any_order = n > 3 ? n - 1 : 2;
    const double bound = (gamma(chain < any_order ? chain : any_order) + kReferenceSlack) * sum_abs;
    const double contract = reduction_error_bound(n, sum_abs);
    return bound > contract ? bound : contract;
}

// What a near miss says after "a tree of additions stays within X here, but ".
inline constexpr const char* kNearMissAdvice =
    "a long chain of float additions, such as atomicAdd of every block's sum into one float or one "
    "thread adding thousands of elements, rounds more (up to {near} here): combine partial sums as a "
    "tree (handout: 'The tolerance'). If your code already does, look for an element counted twice "
    "or left out, which gives errors of this size too.";

// ---- The test of the error itself (see above) -----------------------------------------

// How many times the random-rounding model's root mean square error the limit allows.
inline constexpr double kRmsMargin = 6.0;

// The limit on |computed - exact| for n elements with these sums (see above): what a
// float tree of the contract stays far below, and lower precision exceeds where the
// elements' signs are mixed.
inline double typical_error_limit(std::size_t n, double sum, double sum_squares, double max_abs) {
    const double d = static_cast<double>(max_addition_depth(n));
    const double coherent_chain = static_cast<double>(kMaxSerialChain) / 3.0 + 2.0;
    const double random_rounding =
        kUnitRoundoff / std::sqrt(3.0) * std::sqrt(d * sum_squares + coherent_chain * sum * sum);
    return kRmsMargin * random_rounding + d * kUnitRoundoff * max_abs;
}

// Σ x_i in float64 with Kahan's compensated summation, in index order. Do not compile
// this with -ffast-math: it would cancel the compensation away.
inline double reference_sum(const float* x, std::size_t n) {
    double sum = 0.0;
    double compensation = 0.0;  // the low-order part lost by the last addition
    for (std::size_t i = 0; i < n; ++i) {
        const double corrected_next_term = static_cast<double>(x[i]) - compensation;
        const double new_sum = sum + corrected_next_term;
        compensation = (new_sum - sum) - corrected_next_term;
        sum = new_sum;
    }
    return sum;
}

// Σ|x_i|, the scale of the bound, summed the same way.
inline double reference_sum_abs(const float* x, std::size_t n) {
    double sum = 0.0;
    double compensation = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        const double corrected_next_term = std::fabs(static_cast<double>(x[i])) - compensation;
        const double new_sum = sum + corrected_next_term;
        compensation = (new_sum - sum) - corrected_next_term;
        sum = new_sum;
    }
    return sum;
}

// Σ x_i² (Kahan, in index order; each square of a float is exact in float64) and the
// largest |x_i|, for typical_error_limit.
struct SquaresAndLargest {
    double sum_squares = 0.0;
    double max_abs = 0.0;
};

inline SquaresAndLargest reference_squares_and_largest(const float* x, std::size_t n) {
    SquaresAndLargest out;
    double compensation = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        const double v = static_cast<double>(x[i]);
        const double corrected_next_term = v * v - compensation;
        const double new_sum = out.sum_squares + corrected_next_term;
        compensation = (new_sum - out.sum_squares) - corrected_next_term;
        out.sum_squares = new_sum;
        out.max_abs = std::fabs(v) > out.max_abs ? std::fabs(v) : out.max_abs;
    }
    return out;
}

// True when got is within bound of exact. NaN and infinity never pass: for finite
// inputs the exact sum is finite (only if exact itself were infinite or NaN would the
// same value in got count as right).
inline bool sum_within_bound(float got, double exact, double bound) {
    if (!std::isfinite(exact)) {
        return std::isnan(exact) ? std::isnan(got) : static_cast<double>(got) == exact;
    }
    if (!std::isfinite(got)) return false;
    return std::fabs(static_cast<double>(got) - exact) <= bound;
}

}  // namespace reduction
