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
