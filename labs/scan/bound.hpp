// The references for lab scan and the float tolerance: how far a correct float scan may
// land from the exact prefix sums. Header-only C++17, so the checker's reference and the tests
// share one definition.
//
// ---- Handout: why the float answers may differ, and by how much ---------------------
//
// Floating-point addition rounds (lecture 9): fl(a + b) = (a + b)(1 + δ) with
// |δ| <= u = 2^-24 for float. Rounding makes addition non-associative, so every scan
// algorithm (sequential, Hillis-Steele-Horn, Blelloch, hierarchical, single pass) adds in
// its own order and gets its own float answer, each as good as the others. There is no
// "right" float answer to match bit for bit. The reference is therefore the exact sum
// y_i = x_0 + ... + x_i itself, rounded once (to double: the checker adds in double with
// Neumaier's compensated summation, whose error is below 2^-50 * sum |x_j|, far below
// anything float can resolve), and the tolerance bounds how far any allowed order of
// float additions can land from it.
//
// Each output is a sum of its own, just like a reduction. If every element x_j goes
// through at most d float additions on its way into output i, then (Higham, "Accuracy
// and Stability of Numerical Algorithms", ch. 4)
//
//     |computed y_i - y_i| <= γ_d * (|x_0| + ... + |x_i|),    γ_d = d u / (1 - d u).
//
// The sum of |x_j| and not |y_i|: when signs are mixed the prefix passes near 0 while the
// rounding errors made on the way stay, so no relative tolerance on y_i could work.
//
// What the grader allows you, d(n) = kMaxSerialChain + 2 * ceil(log2 n):
//   * up to kMaxSerialChain = 64 additions in serial chains on any element's path, all
//     levels together (a thread adding its own items one after another: the reference
//     solution's threads chain 16 items, then add 16 more onto their prefix);
//   * trees as deep as 2 log2 n: a warp scan is 5 levels, a Hillis-Steele block scan
//     log2(block), Blelloch's reduction and distribution phases up to 2 log2(section),
//     and each level of a hierarchy adds its own tree plus one add-back.
//
// A single-pass scan (decoupled look-back) adds a chain that no tree bound covers: tile t
// gets its prefix as (the prefix of an earlier tile u) + (the sums of tiles u+1..t-1),
// and tile u got its own the same way. In the usual case u = t - 1, so each tile's prefix
// is one addition deeper than its neighbour's: the depth grows with the number of tiles,
// not with log n, and publishing inclusive prefixes does not change that. Counted in d,
// this would make the tolerance grow like i u sum|x_j|. It is counted apart, more
// tightly: each of those additions adds two sums over runs of whole tiles. The sum of a
// run is a difference of two prefixes, so it is no larger than min(2 M_i, sum|x_j|),
// where M_i = max_{j<=i} |y_j|; the rounding error of the addition is at most u times
// that. And however the look-back groups them, combining the sums of the t tiles before
// output i takes exactly t - 1 additions. Tiles of at least kMinLookBackTile = 2048
// elements (the lecture's 2048-element segment) make that at most L_i = floor(i / 2048).
// All together:
//
//     |computed y_i - y_i| <= [u d(n) S_i + u L_i min(2 M_i, S_i)] / (1 - u (d(n) + L_i))
//                             + 2^-50 S_i,
//
// with S_i = sum_{j<=i} |x_j|. The denominator covers errors made on top of earlier
// errors; the last term is the reference's own error. For the exclusive scan, output i
// is y_{i-1}: S and M run over j < i (M includes the empty prefix, 0).
//
// This is a worst-case bound. Random inputs land far inside it (rounding errors mostly
// cancel), but one large value followed by many small ones (lecture 9's 1000 + 0.1 +
// 0.1 + ...) pushes a long serial chain towards it: keep chains short and trees shallow.
// The integer scans are exact: every output must equal the int64 reference.
//
// Lower precision needs no test of its own here. A scan that converts its elements to
// bf16 or fp16 before adding them in float fails this bound at every size where the
// signs are mixed (every bench case and every case but the hard one), at its first
// outputs: out[0] is x[0] itself, allowed a few dozen u, and converting it moves it by up
// to 2^-9 (bf16) or 2^-12 (fp16) of itself; the first prefixes are short sums with tight
// bounds, and every output is judged. In the hard case every output is a float near 2^24,
// where floats are 2 apart, so a correct scan is off by up to 1 everywhere, more than
// converting the small elements to bf16 adds: bf16 passes there and nothing in the
// outputs tells it from float; fp16 cannot hold 2^24 and fails (tests/test_precision.cpp).
// --------------------------------------------------------------------------------------
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace scan_bound {

inline constexpr double kUnitRoundoff = 0x1p-24;          // float, round to nearest
inline constexpr std::size_t kMaxSerialChain = 64;         // serial additions on any path
inline constexpr std::size_t kMinLookBackTile = 2048;      // elements per look-back tile, at least
inline constexpr double kReferenceRelativeError = 0x1p-50;  // the double reference's error / sum|x|

enum class ScanKind { inclusive, exclusive };

// ceil(log2 n); 0 for n <= 1.
constexpr std::size_t ceil_log2(std::size_t n) {
    std::size_t bits = 0;
    while (bits < 63 && (std::size_t{1} << bits) < n) ++bits;
    return bits;
}

// d(n): the most float additions (serial chains and trees) allowed on any element's path.
constexpr std::size_t addition_depth_bound(std::size_t n) { return kMaxSerialChain + 2 * ceil_log2(n); }

// L_i: the most look-back additions (between sums of whole tiles) before output i.
constexpr std::size_t look_back_additions_bound(std::size_t i) { return i / kMinLookBackTile; }

// The difference allowed between float output i of a scan of n elements and the exact
// prefix sum. prefix_abs_sum = sum of |x_j| over the elements in that output;
// prefix_abs_max = the largest |prefix| up to it (M_i above).
inline double scan_error_bound(std::size_t i, double prefix_abs_sum, double prefix_abs_max, std::size_t n) {
    const double depth = static_cast<double>(addition_depth_bound(n));
    const double look_back = static_cast<double>(look_back_additions_bound(i));
    const double u = kUnitRoundoff;
    const double growth = 1.0 - u * (depth + look_back);
    if (growth <= 0.0) return std::numeric_limits<double>::infinity();  // beyond any float scan's reach
    const double tile_run_bound = std::min(2.0 * prefix_abs_max, prefix_abs_sum);
    return u * (depth * prefix_abs_sum + look_back * tile_run_bound) / growth +
           kReferenceRelativeError * prefix_abs_sum;
}

// ---- Near misses ---------------------------------------------------------------------
// The commonest scan outside the contract carries each block's total into the next block
// one after another (or lets one thread add thousands of elements in a row): a chain of
// one addition per small block up to output i. An output outside the bound but within
// what such a chain can reach is a near miss, explained in words. The chain allowed for:
// one addition per kNearMissTile elements before output i, on top of the contract's tree.
inline constexpr std::size_t kNearMissTile = 256;

// The largest difference from the exact prefix that output i of a scan of n elements may
// have when one addition per kNearMissTile elements is chained. Never below the bound.
inline double long_chain_scan_bound(std::size_t i, double prefix_abs_sum, double prefix_abs_max, std::size_t n) {
    const double chain = static_cast<double>(addition_depth_bound(n) + (i + 1) / kNearMissTile);
    const double du = chain * kUnitRoundoff;
    const double contract = scan_error_bound(i, prefix_abs_sum, prefix_abs_max, n);
    if (du >= 1.0) return std::numeric_limits<double>::infinity();
    const double bound = du / (1.0 - du) * prefix_abs_sum + kReferenceRelativeError * prefix_abs_sum;
    return bound > contract ? bound : contract;
}

// What a near miss says after "a tree of additions stays within X here, but ".
inline constexpr const char* kNearMissAdvice =
    "a long chain of float additions, such as carrying each block's total into the next block one "
    "after another over small blocks, or one thread adding thousands of elements in a row, rounds more "
    "(up to {near} here): combine block totals as a tree, or carry between tiles of at least 2048 "
    "elements (handout: 'The tolerance'). If your code already does, look for an element counted "
    "twice or left out, which gives errors of this size too.";

// Is a float output acceptable? Never when it is NaN or infinite and the reference is
// finite, whatever the allowance; a non-finite reference (non-finite input) must be met
// exactly.
inline bool prefix_within_bound(float got, double expected, double allowed) {
    if (std::isnan(expected)) return std::isnan(got);
    if (std::isinf(expected)) return static_cast<double>(got) == expected;
    return std::isfinite(got) && std::fabs(static_cast<double>(got) - expected) <= allowed;
}

// A sum kept in double with Neumaier's compensation (Kahan's, also right when the new
// term is the larger): within about 2^-52 sum|x| of exact for any n we can store.
class CompensatedSum {
  public:
    void add(double x) {
        if (!std::isfinite(x) || !std::isfinite(sum_)) {  // Inf/NaN: what IEEE gives, uncompensated
            sum_ += x;
            compensation_ = 0.0;
            return;
        }
        const double total = sum_ + x;
        compensation_ += std::fabs(sum_) >= std::fabs(x) ? (sum_ - total) + x : (x - total) + sum_;
        sum_ = total;
    }
    double value() const { return sum_ + compensation_; }

  private:
    double sum_ = 0.0;
    double compensation_ = 0.0;
};

// The running reference for a float scan: add the elements in order, and after each the
// exact prefix, the sum of |x_j| and the largest |prefix| so far are at hand. It stores
// nothing per element, so it also serves n = 2^28 and beyond.
class PrefixReference {
  public:
    void add(float x) {
        prefix_.add(x);
        abs_sum_.add(std::fabs(x));
        abs_max_ = std::max(abs_max_, std::fabs(prefix_.value()));
    }
    double prefix() const { return prefix_.value(); }
    double abs_sum() const { return abs_sum_.value(); }
    double abs_max() const { return abs_max_; }

  private:
    CompensatedSum prefix_;
    CompensatedSum abs_sum_;
    double abs_max_ = 0.0;  // the empty prefix, 0, counts
};

// expected[i] and allowed[i] for every output of a float scan of in[0..n), and, when
// near_miss is given, near_miss[i] (long_chain_scan_bound).
inline void reference_scan_float(const float* in, std::size_t n, ScanKind kind, double* expected, double* allowed,
                                 double* near_miss = nullptr) {
    PrefixReference reference;
    for (std::size_t i = 0; i < n; ++i) {
        if (kind == ScanKind::inclusive) reference.add(in[i]);
        expected[i] = reference.prefix();
        allowed[i] = scan_error_bound(i, reference.abs_sum(), reference.abs_max(), n);
        if (near_miss != nullptr) near_miss[i] = long_chain_scan_bound(i, reference.abs_sum(), reference.abs_max(), n);
        if (kind == ScanKind::exclusive) reference.add(in[i]);
    }
}

// The integer scans are exact: the int64 prefix sums (the harness keeps them in int range).
inline void reference_scan_int(const int* in, std::size_t n, ScanKind kind, std::int64_t* expected) {
    std::int64_t prefix = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (kind == ScanKind::inclusive) prefix += in[i];
        expected[i] = prefix;
        if (kind == ScanKind::exclusive) prefix += in[i];
    }
}

inline bool int_prefix_matches(int got, std::int64_t expected) { return static_cast<std::int64_t>(got) == expected; }

}  // namespace scan_bound
