// Tests of labs/reduction/bound.hpp, the tolerance of lab reduction.
//
// (a) Correct answers land inside the bound. Each solution's order of additions is
//     replayed here in float on the CPU, addition for addition (IEEE-754 float addition
//     gives the same bits on the CPU as on the GPU), for awkward sizes and for inputs
//     that are hard for floating point. Each simulated partial sum also carries its
//     depth (the most additions any element in it took part in), which must stay within
//     the contract's max_addition_depth(n): that is what the bound is derived from.
// (b) Plainly wrong answers land outside it: an element or a block left out or counted
//     twice, one block's sum, 0, NaN.
//
// The simulations mirror solutions/reduction/ladder/*.cu and solutions/reduction/
// reduction.cu; their constants are repeated here and must follow those files.
#include "bound.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace {

using reduction::max_addition_depth;
using reduction::reduction_error_bound;
using reduction::sum_within_bound;

// ---- Seeded inputs ------------------------------------------------------------------
// Every element is a pure function of (seed, index) and an integer multiple of 2^-24
// that float holds exactly, so the exact sum is an integer sum: no reference needed to
// test the reference.

enum class Inputs {
    mixed_signs,       // uniform in [-1, 1)
    positive,          // uniform in [0, 1)
    large_then_small,  // 2^24, then uniform [0, 1): lecture 9's 1000 + 10,000 × 0.1 in float
    cancellation,      // uniform [-1, 1), and per 4096 elements a +L and a -L', L, L' in [2^12, 2^13)
    half_to_one,       // |x| uniform in [0.5, 1), random signs: no element is negligible
};

std::string name_of(Inputs kind) {
    switch (kind) {
        case Inputs::mixed_signs: return "mixed_signs";
        case Inputs::positive: return "positive";
        case Inputs::large_then_small: return "large_then_small";
        case Inputs::cancellation: return "cancellation";
        case Inputs::half_to_one: return "half_to_one";
    }
    return "?";
}

constexpr std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// The input as a function of the index, in units of 2^-24.
struct Source {
    Inputs kind;
    std::uint64_t seed_key;

    Source(Inputs k, std::uint64_t seed) : kind(k), seed_key(splitmix64(seed ^ 0x5EEDull)) {}

    std::int64_t units(std::size_t i) const {
        const std::uint64_t bits = splitmix64(seed_key + i);
        const auto u24 = static_cast<std::int64_t>(bits >> 40);          // 24 random bits
        const auto u23 = static_cast<std::int64_t>((bits >> 17) & 0x7FFFFF);  // 23 more
        const bool negative = (bits & 1) != 0;
        switch (kind) {
            case Inputs::mixed_signs: return 2 * u24 - (std::int64_t{1} << 24);
            case Inputs::positive: return u24;
            case Inputs::large_then_small: return i == 0 ? std::int64_t{1} << 48 : u24;
            case Inputs::cancellation: {
                const std::int64_t large = (std::int64_t{1} << 36) + (u23 << 13);  // [2^12, 2^13), 24 bits
                if (i % 4096 == 0) return large;
                if (i % 4096 == 1) return -large;
                return 2 * u24 - (std::int64_t{1} << 24);
            }
            case Inputs::half_to_one: {
                const std::int64_t magnitude = (std::int64_t{1} << 23) + u23;  // [0.5, 1)
                return negative ? -magnitude : magnitude;
            }
        }
        return 0;
    }
    float operator[](std::size_t i) const { return static_cast<float>(units(i)) * 0x1p-24f; }  // exact
};

// The exact Σx and Σ|x| (integers in units of 2^-24, exact in double below 2^53), and
// Σx² and max|x| for the test of the error itself (typical_error_limit), Σx² to double
// precision, which is all a limit needs.
struct ExactSums {
    double sum;
    double sum_abs;
    double sum_squares = 0.0;
    double max_abs = 0.0;
};

template <class Elements>
ExactSums exact_sums(const Elements& x, std::size_t n) {
    std::int64_t sum = 0, sum_abs = 0;
    double sum_squares = 0.0, max_abs = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        const auto u = static_cast<std::int64_t>(static_cast<double>(x[i]) * 0x1p24);
        sum += u;
        sum_abs += u < 0 ? -u : u;
        const double v = static_cast<double>(x[i]);
        sum_squares += v * v;
        max_abs = std::max(max_abs, std::fabs(v));
    }
    return {static_cast<double>(sum) * 0x1p-24, static_cast<double>(sum_abs) * 0x1p-24, sum_squares, max_abs};
}

std::vector<float> materialise(const Source& source, std::size_t n) {
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = source[i];
    return x;
}

// A view of an input with the elements [begin, begin + count) left out (drop) or
// repeated once right after themselves (repeat): the bugs of a wrong index.
struct Dropped {
    const std::vector<float>& x;
    std::size_t begin, count;
    float operator[](std::size_t i) const { return x[i < begin ? i : i + count]; }
};
struct Repeated {
    const std::vector<float>& x;
    std::size_t begin, count;
    float operator[](std::size_t i) const { return x[i < begin + count ? i : i - count]; }
};

// ---- Partial sums that know their depth -----------------------------------------------

// A partial sum, and the most additions any element in it has gone through. `empty`
// stands for the GPU's padding 0.0f: adding it is exact, so it adds no depth.
struct Partial {
    float value = 0.0f;
    int depth = 0;
    bool empty = true;
};

inline Partial leaf(float x) { return {x, 0, false}; }

inline Partial operator+(const Partial& a, const Partial& b) {
    if (a.empty) return b;
    if (b.empty) return a;
    return {a.value + b.value, std::max(a.depth, b.depth) + 1, false};
}

// Lecture 3's naive tree: in the round of `stride`, t % (2 stride) == 0 adds t + stride.
void tree_interleaved(std::vector<Partial>& s) {
    for (std::size_t stride = 1; stride < s.size(); stride *= 2)
        for (std::size_t t = 0; t < s.size(); ++t)
            if (t % (2 * stride) == 0) s[t] = s[t] + s[t + stride];
}

// Lecture 3's alternative strategy: t < stride adds t + stride, stride halving from
// size/2 down to `last_stride`. __shfl_down_sync within a warp is the same tree: lane t
// adds lane t + offset (lanes past the end only feed lanes whose results are unused).
void tree_sequential(std::vector<Partial>& s, std::size_t last_stride = 1) {
    for (std::size_t stride = s.size() / 2; stride >= last_stride; stride /= 2)
        for (std::size_t t = 0; t < stride; ++t) s[t] = s[t] + s[t + stride];
}

// ---- The multi-pass rungs --------------------------------------------------------------
// reduce_blocks of each rung: one block's partial sum from level[first ..] (count values).

constexpr std::size_t kThreadsPerBlock = 256;  // every rung's block size

enum class Rung { interleaved_divergent, sequential_addressing, first_add_during_load, warp_shuffle };

std::string name_of(Rung rung) {
    switch (rung) {
        case Rung::interleaved_divergent: return "interleaved_divergent";
        case Rung::sequential_addressing: return "sequential_addressing";
        case Rung::first_add_during_load: return "first_add_during_load";
        case Rung::warp_shuffle: return "warp_shuffle";
    }
    return "?";
}

std::size_t elements_per_block(Rung rung) {
    return rung == Rung::interleaved_divergent || rung == Rung::sequential_addressing ? kThreadsPerBlock
                                                                                       : 2 * kThreadsPerBlock;
}

template <class Values>
Partial reduce_block(Rung rung, const Values& level, std::size_t first, std::size_t count) {
    auto value = [&](std::size_t j) { return j < count ? level(first + j) : Partial{}; };
    std::vector<Partial> s(kThreadsPerBlock);
    switch (rung) {
        case Rung::interleaved_divergent:
            for (std::size_t t = 0; t < kThreadsPerBlock; ++t) s[t] = value(t);
            tree_interleaved(s);
            return s[0];
        case Rung::sequential_addressing:
            for (std::size_t t = 0; t < kThreadsPerBlock; ++t) s[t] = value(t);
            tree_sequential(s);
            return s[0];
        case Rung::first_add_during_load:
            for (std::size_t t = 0; t < kThreadsPerBlock; ++t) s[t] = value(t) + value(t + kThreadsPerBlock);
            tree_sequential(s);
            return s[0];
        case Rung::warp_shuffle: {
            for (std::size_t t = 0; t < kThreadsPerBlock; ++t) s[t] = value(t) + value(t + kThreadsPerBlock);
            tree_sequential(s, /*last_stride=*/32);  // shared memory down to one warp
            std::vector<Partial> lanes(s.begin(), s.begin() + 32);
            tree_sequential(lanes);  // five __shfl_down_sync rounds
            return lanes[0];
        }
    }
    return {};
}

// reduce_sum of a multi-pass rung: passes until one block is left.
template <class Elements>
Partial simulate_multipass(Rung rung, const Elements& x, std::size_t n) {
    if (n == 0) return {};  // only for the wrong answers below: the sum of nothing
    const std::size_t per_block = elements_per_block(rung);
    auto blocks_for = [&](std::size_t count) { return (count + per_block - 1) / per_block; };
    std::vector<Partial> sums(blocks_for(n));
    auto input = [&](std::size_t i) { return leaf(x[i]); };
    for (std::size_t b = 0; b < sums.size(); ++b)
        sums[b] = reduce_block(rung, input, b * per_block, std::min(per_block, n - b * per_block));
    while (sums.size() > 1) {
        std::vector<Partial> next(blocks_for(sums.size()));
        auto level = [&](std::size_t i) { return sums[i]; };
        for (std::size_t b = 0; b < next.size(); ++b)
            next[b] = reduce_block(rung, level, b * per_block, std::min(per_block, sums.size() - b * per_block));
        sums = std::move(next);
    }
    return sums[0];
}

// ---- The best rung: solutions/reduction/reduction.cu -----------------------------------

constexpr std::size_t kVectorsPerThread = 4;
constexpr std::size_t kVectorsPerTile = kThreadsPerBlock * kVectorsPerThread;
constexpr std::size_t kMaxTilesPerBlock = 64;
// An H100 or H200: 132 SMs; reduce_sum_kernel uses 32 registers, so 8 blocks of 256
// threads fit on one SM.
constexpr std::size_t kResidentH100 = 132 * 8;

std::size_t grid_size(std::size_t n, std::size_t resident) {
    const std::size_t tiles = (n / 4 + kVectorsPerTile - 1) / kVectorsPerTile;
    if (tiles <= resident) return tiles > 0 ? tiles : 1;
    const std::size_t tiles_per_wave = resident * kMaxTilesPerBlock;
    return resident * ((tiles + tiles_per_wave - 1) / tiles_per_wave);
}

// block_sum: a warp_sum per warp, then a warp_sum of the 8 warp sums.
Partial block_sum(const std::vector<Partial>& thread_values) {
    std::vector<Partial> warp_sums(32);  // lanes 8..31 hold the padding 0.0f
    for (std::size_t w = 0; w < kThreadsPerBlock / 32; ++w) {
        std::vector<Partial> lanes(thread_values.begin() + 32 * w, thread_values.begin() + 32 * (w + 1));
        tree_sequential(lanes);
        warp_sums[w] = lanes[0];
    }
    tree_sequential(warp_sums);
    return warp_sums[0];
}

struct BestRungResult {
    Partial sum;
    std::size_t grid = 0;
    std::size_t longest_chain = 0;  // the most tiles added into one accumulator
};

// `offset` is the input pointer's distance past a 16-byte boundary, in floats (0..3).
template <class Elements>
BestRungResult simulate_best(const Elements& x, std::size_t n, std::size_t offset, std::size_t resident) {
    std::size_t head = offset % 4 == 0 ? 0 : 4 - offset % 4;
    head = std::min(head, n);
    const std::size_t vectors = (n - head) / 4;
    const std::size_t tail = head + 4 * vectors;
    const std::size_t full_tiles = vectors / kVectorsPerTile;
    const std::size_t rest = vectors - full_tiles * kVectorsPerTile;

    BestRungResult result;
    result.grid = grid_size(n, resident);
    std::vector<Partial> block_sums(result.grid);
    std::vector<Partial> thread_values(kThreadsPerBlock);
    for (std::size_t b = 0; b < result.grid; ++b) {
        for (std::size_t t = 0; t < kThreadsPerBlock; ++t) {
            const std::size_t thread = b * kThreadsPerBlock + t;
            std::array<Partial, 4> acc{thread < head ? leaf(x[thread]) : Partial{},
                                       tail + thread < n ? leaf(x[tail + thread]) : Partial{}, Partial{}, Partial{}};
            // add_tile: ((v0 + v1) + (v2 + v3)) per component, then into the accumulator.
            // Group g of the tile lies at floats head + 4 (tile_first + g) + 0..3.
            auto add_tile = [&](std::size_t tile_first, std::size_t groups_in_tile) {
                auto group = [&](std::size_t k, std::size_t c) {
                    const std::size_t g = k * kThreadsPerBlock + t;
                    return g < groups_in_tile ? leaf(x[head + 4 * (tile_first + g) + c]) : Partial{};
                };
                for (std::size_t c = 0; c < 4; ++c)
                    acc[c] = acc[c] + ((group(0, c) + group(1, c)) + (group(2, c) + group(3, c)));
            };
            std::size_t chain = 0;
            for (std::size_t tile = b; tile < full_tiles; tile += result.grid, ++chain)
                add_tile(tile * kVectorsPerTile, kVectorsPerTile);
            if (rest > 0 && b == full_tiles % result.grid) {
                add_tile(full_tiles * kVectorsPerTile, rest);
                ++chain;
            }
            result.longest_chain = std::max(result.longest_chain, chain);
            thread_values[t] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        }
        block_sums[b] = block_sum(thread_values);
    }
    // The last block: four accumulators per thread over the block sums, then block_sum.
    for (std::size_t t = 0; t < kThreadsPerBlock; ++t) {
        std::array<Partial, 4> partial{};
        for (std::size_t b = t; b < result.grid; b += 4 * kThreadsPerBlock)
            for (std::size_t k = 0; k < 4; ++k)
                if (b + k * kThreadsPerBlock < result.grid) partial[k] = partial[k] + block_sums[b + k * kThreadsPerBlock];
        thread_values[t] = (partial[0] + partial[1]) + (partial[2] + partial[3]);
    }
    result.sum = block_sum(thread_values);
    return result;
}

// ---- Checks --------------------------------------------------------------------------

// Sizes around warps, blocks, float4 groups and tiles, and one past 2^20 (three passes
// for the multi-pass rungs). kLargeSize, four passes, is checked for fewer inputs.
const std::vector<std::size_t> kSizes = {1,    2,    3,    4,    5,    31,    32,    33,    255,
                                         256,  257,  511,  512,  513,  1023,  1024,  1025,  4095,
                                         4096, 4097, 4099, 8191, 65535, 65536, 65537, (1u << 20) + 7};
constexpr std::size_t kLargeSize = (std::size_t{1} << 22) + 3;
const std::vector<Inputs> kLargeInputs = {Inputs::mixed_signs, Inputs::large_then_small};
const std::vector<Inputs> kAllInputs = {Inputs::mixed_signs, Inputs::positive, Inputs::large_then_small,
                                        Inputs::cancellation, Inputs::half_to_one};
const std::vector<Rung> kMultipassRungs = {Rung::interleaved_divergent, Rung::sequential_addressing,
                                           Rung::first_add_during_load, Rung::warp_shuffle};

// What a correct order must satisfy: depth within the contract, value within the bound,
// and its error within the test of the error itself (bound.hpp: lower precision), with a
// margin of 3.
void check_correct(const Partial& sum, std::size_t n, const ExactSums& exact, double reference) {
    CAPTURE(n);
    CHECK(sum.depth <= static_cast<int>(max_addition_depth(n)));
    const double bound = reduction_error_bound(n, exact.sum_abs);
    const double limit = reduction::typical_error_limit(n, exact.sum, exact.sum_squares, exact.max_abs);
    CAPTURE(sum.value);
    CAPTURE(reference);
    CAPTURE(bound);
    CAPTURE(limit);
    CHECK(sum_within_bound(sum.value, reference, bound));
    CHECK(sum_within_bound(sum.value, exact.sum, bound));
    CHECK(std::fabs(static_cast<double>(sum.value) - exact.sum) <= limit / 3.0);
}

// A wrong sum must be outside the bound.
void check_wrong(float got, std::size_t n, const std::vector<float>& x) {
    const double bound = reduction_error_bound(n, reduction::reference_sum_abs(x.data(), n));
    const double reference = reduction::reference_sum(x.data(), n);
    CAPTURE(n);
    CAPTURE(got);
    CAPTURE(reference);
    CAPTURE(bound);
    CHECK_FALSE(sum_within_bound(got, reference, bound));
}

}  // namespace

TEST_CASE("max_addition_depth is the contract: 64 + ceil(log2 n) + 8, at most n - 1, at least 2") {
    CHECK(reduction::ceil_log2(1) == 0);
    CHECK(reduction::ceil_log2(2) == 1);
    CHECK(reduction::ceil_log2(3) == 2);
    CHECK(reduction::ceil_log2(1024) == 10);
    CHECK(reduction::ceil_log2(1025) == 11);
    CHECK(max_addition_depth(1) == 2);
    CHECK(max_addition_depth(2) == 2);
    CHECK(max_addition_depth(3) == 2);
    CHECK(max_addition_depth(33) == 32);
    CHECK(max_addition_depth(1024) == 64 + 10 + 8);
    CHECK(max_addition_depth((1u << 20) + 7) == 64 + 21 + 8);
    CHECK(max_addition_depth(std::size_t{1} << 28) == 100);
    CHECK(reduction::gamma(100) == doctest::Approx(100 * 0x1p-24).epsilon(1e-5));
    // The bound grows with log2(n) and scales with Σ|x|.
    CHECK(reduction_error_bound(1u << 20, 1.0) < reduction_error_bound(1u << 21, 1.0));
    CHECK(reduction_error_bound(1u << 20, 2.0) == doctest::Approx(2 * reduction_error_bound(1u << 20, 1.0)));
}

TEST_CASE("sum_within_bound: NaN and infinity never pass a finite exact sum") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    CHECK(sum_within_bound(1.0f, 1.0, 0.0));
    CHECK(sum_within_bound(1.5f, 1.0, 0.5));
    CHECK_FALSE(sum_within_bound(1.5f, 1.0, 0.25));
    CHECK_FALSE(sum_within_bound(nan, 1.0, 1e30));
    CHECK_FALSE(sum_within_bound(inf, 1.0, 1e30));
    CHECK_FALSE(sum_within_bound(-inf, 1.0, 1e30));
    CHECK_FALSE(sum_within_bound(nan, 0.0, std::numeric_limits<double>::infinity()));
    // Unreachable with finite inputs, but consistent: only the same non-finite value passes.
    CHECK(sum_within_bound(inf, static_cast<double>(inf), 0.0));
    CHECK_FALSE(sum_within_bound(-inf, static_cast<double>(inf), 0.0));
    CHECK(sum_within_bound(nan, static_cast<double>(nan), 0.0));
}

TEST_CASE("reference_sum: Kahan in float64 is exact to within kReferenceSlack * sum|x|") {
    for (const Inputs kind : kAllInputs) {
        for (const std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{(1u << 22) + 3}}) {
            INFO("inputs: " << name_of(kind));
            CAPTURE(n);
            const std::vector<float> x = materialise(Source(kind, 7), n);
            const ExactSums exact = exact_sums(x, n);
            CHECK(std::fabs(reduction::reference_sum(x.data(), n) - exact.sum) <=
                  reduction::kReferenceSlack * exact.sum_abs);
            CHECK(std::fabs(reduction::reference_sum_abs(x.data(), n) - exact.sum_abs) <=
                  reduction::kReferenceSlack * exact.sum_abs);
        }
    }
}

TEST_CASE("every multi-pass rung lands inside the bound, with its depth inside the contract") {
    for (const Inputs kind : kAllInputs) {
        const bool large = std::find(kLargeInputs.begin(), kLargeInputs.end(), kind) != kLargeInputs.end();
        const std::vector<float> x = materialise(Source(kind, 1), large ? kLargeSize : kSizes.back());
        std::vector<std::size_t> sizes = kSizes;
        if (large) sizes.push_back(kLargeSize);
        for (const std::size_t n : sizes) {
            const ExactSums exact = exact_sums(x, n);
            const double reference = reduction::reference_sum(x.data(), n);
            for (const Rung rung : kMultipassRungs) {
                INFO("inputs: " << name_of(kind));
                INFO("rung: " << name_of(rung));
                const Partial sum = simulate_multipass(rung, x, n);
                check_correct(sum, n, exact, reference);
                // A tree: no element takes part in more than ceil(log2 n) additions.
                CHECK(sum.depth <= static_cast<int>(reduction::ceil_log2(n)));
            }
        }
    }
}

TEST_CASE("the best rung lands inside the bound for every size and alignment") {
    for (const Inputs kind : kAllInputs) {
        const bool large = std::find(kLargeInputs.begin(), kLargeInputs.end(), kind) != kLargeInputs.end();
        const std::vector<float> x = materialise(Source(kind, 2), (large ? kLargeSize : kSizes.back()) + 3);
        std::vector<std::size_t> sizes = kSizes;
        if (large) sizes.push_back(kLargeSize);
        for (const std::size_t n : sizes) {
            for (std::size_t offset = 0; offset < 4; ++offset) {
                INFO("inputs: " << name_of(kind));
                CAPTURE(offset);
                // The input starts `offset` floats past a 16-byte boundary.
                const float* in = x.data() + offset;
                const ExactSums exact = exact_sums(in, n);
                const BestRungResult best = simulate_best(in, n, offset, kResidentH100);
                check_correct(best.sum, n, exact, reduction::reference_sum(in, n));
                CHECK(best.longest_chain <= reduction::kMaxSerialChain);
            }
        }
    }
}

TEST_CASE("the best rung on a small GPU: the grid grows so that no chain passes 64") {
    // One SM of 8 blocks: 2^22 + 3 elements need 1025 tiles, three waves of blocks.
    for (const std::size_t resident : {std::size_t{1}, std::size_t{8}, std::size_t{24}}) {
        const Source source(Inputs::positive, 3);
        const std::size_t n = (1u << 22) + 3;
        const std::vector<float> x = materialise(source, n);
        const BestRungResult best = simulate_best(x, n, 0, resident);
        CAPTURE(resident);
        CAPTURE(best.grid);
        CHECK(best.grid % resident == 0);
        CHECK(best.longest_chain <= kMaxTilesPerBlock);
        check_correct(best.sum, n, exact_sums(x, n), reduction::reference_sum(x.data(), n));
    }
}

TEST_CASE("the best rung at n = 2^28 on an H100/H200 (132 SMs x 8 blocks of 256 threads)") {
    const std::size_t n = std::size_t{1} << 28;
    for (const Inputs kind : {Inputs::positive}) {
        INFO("inputs: " << name_of(kind));
        const Source source(kind, 4);  // generated on the fly: 1 GiB is not stored
        const BestRungResult best = simulate_best(source, n, 0, kResidentH100);
        const ExactSums exact = exact_sums(source, n);
        CHECK(best.grid == kResidentH100);
        CHECK(best.longest_chain == 63);  // 65536 tiles over 1056 blocks
        check_correct(best.sum, n, exact, exact.sum);
        MESSAGE(name_of(kind) << ": depth " << best.sum.depth << " of " << max_addition_depth(n)
                              << " allowed; error " << std::fabs(best.sum.value - exact.sum) << " of "
                              << reduction_error_bound(n, exact.sum_abs) << " allowed");
    }
}

TEST_CASE("cancellation: the bound must scale with sum|x|, not with |sum x|") {
    // Lecture 9's lost addition in float: 2^24 + 1 rounds back to 2^24 (the tie goes to
    // the even neighbour), so ((2^24 + 1) - 2^24) gives 0 where the exact sum is 1. Every
    // addition was correctly rounded: this is a correct program, and the bound passes it.
    const std::vector<float> x = {0x1p24f, 1.0f, -0x1p24f};
    const float got = (x[0] + x[1]) + x[2];
    CHECK(got == 0.0f);
    const double exact = reduction::reference_sum(x.data(), x.size());
    CHECK(exact == 1.0);
    CHECK(sum_within_bound(got, exact, reduction_error_bound(x.size(), reduction::reference_sum_abs(x.data(), 3))));
    // A tolerance relative to the answer would have failed it.
    CHECK_FALSE(sum_within_bound(got, exact, reduction::gamma(max_addition_depth(3)) * std::fabs(exact)));
}

TEST_CASE("a sequential float loop over the hard case is outside the bound") {
    // Lecture 9's "worst case error O(N)": after 2^24 every element below 1 is lost. The
    // bound, which assumes a tree, catches it; a tree of the same elements passes.
    const std::size_t n = 1u << 20;
    const std::vector<float> x = materialise(Source(Inputs::large_then_small, 5), n);
    float sequential = 0.0f;
    for (const float v : x) sequential += v;
    CHECK(sequential == 0x1p24f);
    check_wrong(sequential, n, x);
    const Partial tree = simulate_multipass(Rung::sequential_addressing, x, n);
    CHECK(sum_within_bound(tree.value, reduction::reference_sum(x.data(), n),
                           reduction_error_bound(n, reduction::reference_sum_abs(x.data(), n))));
}

TEST_CASE("wrong: the last element left out (n <= 2^16, no element below 0.5 in magnitude)") {
    // An element is only visible above the bound, about 5e-6 * sum|x| here: with |x| >=
    // 0.5 that holds for any n up to 2^16. (A 0.001 at the end of 2^16 elements is below
    // what any float tree can resolve, and no tolerance can tell it missing.)
    const std::vector<float> x = materialise(Source(Inputs::half_to_one, 6), 1u << 16);
    for (const std::size_t n : {1u, 2u, 3u, 31u, 32u, 33u, 255u, 256u, 257u, 1023u, 1024u, 1025u, 4097u, 65535u,
                                65536u}) {
        const float got = simulate_multipass(Rung::sequential_addressing, x, n - 1).value;  // n - 1 == 0: 0.0f
        check_wrong(got, n, x);
        const float best = simulate_best(x, n - 1, 0, kResidentH100).sum.value;
        check_wrong(best, n, x);
    }
}

TEST_CASE("wrong: one block of 256 elements left out or counted twice at n = 2^20 + 7") {
    // Positive inputs: a block of mixed signs can sum to almost nothing, and then no
    // tolerance can see it missing.
    const std::size_t n = (1u << 20) + 7;
    for (const Inputs kind : {Inputs::positive, Inputs::large_then_small}) {
        const std::vector<float> x = materialise(Source(kind, 7), n);
        for (const std::size_t block : {std::size_t{0}, std::size_t{1000}, n / 256 - 1}) {
            INFO("inputs: " << name_of(kind));
            CAPTURE(block);
            const Dropped dropped{x, block * 256, 256};
            check_wrong(simulate_multipass(Rung::sequential_addressing, dropped, n - 256).value, n, x);
            check_wrong(simulate_best(dropped, n - 256, 0, kResidentH100).sum.value, n, x);
            const Repeated repeated{x, block * 256, 256};
            check_wrong(simulate_multipass(Rung::sequential_addressing, repeated, n + 256).value, n, x);
            check_wrong(simulate_best(repeated, n + 256, 0, kResidentH100).sum.value, n, x);
        }
    }
}

TEST_CASE("wrong: one block's partial sum, 0, NaN, infinity") {
    for (const Inputs kind : kAllInputs) {
        for (const std::size_t n : {std::size_t{1} << 16, (std::size_t{1} << 20) + 7}) {
            INFO("inputs: " << name_of(kind));
            const std::vector<float> x = materialise(Source(kind, 8), n);
            // The first pass's first block, as if the later passes never ran.
            check_wrong(simulate_multipass(Rung::first_add_during_load, x, 512).value, n, x);
            check_wrong(std::numeric_limits<float>::quiet_NaN(), n, x);
            check_wrong(std::numeric_limits<float>::infinity(), n, x);
            // 0 is wrong wherever the sum itself is larger than the bound: always with
            // positive inputs; with mixed signs the sum may by chance be near 0.
            if (kind == Inputs::positive || kind == Inputs::large_then_small) check_wrong(0.0f, n, x);
        }
    }
}
