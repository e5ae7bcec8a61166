// Tests for labs/scan/bound.hpp.
//
// (a) The tolerance admits every summation order the solution ladder really uses. Each
//     rung's float additions are replayed on the CPU in exactly the kernel's order
//     (solutions/scan/ladder/hillis_steele.cu, blelloch.cu, hierarchical.cu and
//     solutions/scan/scan.cu, with their block and tile sizes), on seeded inputs up to
//     2^22 + 1 elements; every output must land inside the bound. Each simulated value
//     also carries how it was formed (its depth and its look-back additions), and those
//     must stay within the counts the bound assumes, whatever the data.
// (b) Plain wrong answers fall outside it: inclusive for exclusive and back, a missing
//     add-back, a block total never added, zeros, NaN, Inf.
//
// Built by CMake as part of test_scan (ctest).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "bound.hpp"

using scan_bound::ScanKind;

namespace {

// ---- Seeded inputs -----------------------------------------------------------------

std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

float uniform01(std::uint64_t& state) { return static_cast<float>(splitmix64(state) >> 40) * 0x1p-24f; }

enum class Input { positive, mixed_signs, one_large, large_cancelled };

const char* name_of(Input input) {
    switch (input) {
        case Input::positive: return "uniform [0, 1)";
        case Input::mixed_signs: return "uniform [-1, 1)";
        case Input::one_large: return "2^24 first, then uniform [0, 1)";
        case Input::large_cancelled: return "uniform [-1, 1) with +2^24 at n/3 and -2^24 at 2n/3";
    }
    return "?";
}

std::vector<float> make_input(Input input, std::size_t n, std::uint64_t seed) {
    std::uint64_t state = seed;
    std::vector<float> x(n);
    for (float& v : x) v = input == Input::positive || input == Input::one_large ? uniform01(state)
                                                                                  : 2.0f * uniform01(state) - 1.0f;
    if (input == Input::one_large) x[0] = 0x1p24f;
    if (input == Input::large_cancelled && n >= 3) {
        x[n / 3] = 0x1p24f;
        x[2 * n / 3] = -0x1p24f;
    }
    return x;
}

// ---- A float that remembers how it was formed ----------------------------------------
//
// `empty` is the GPU's 0 before anything was added (padding past n, lane 0's exclusive
// value, ...): adding it is exact, so it neither rounds nor deepens anything.

struct Sum {
    float value = 0.0f;
    int depth = 0;               // most depth-counted additions on any element's path
    std::int64_t look_back = 0;  // look-back additions (between whole-tile sums) in the tree
    bool empty = true;
};

Sum element(float x) { return Sum{x, 0, 0, false}; }

// An addition inside a tile or a hierarchy level: counted in the depth.
Sum operator+(const Sum& a, const Sum& b) {
    if (a.empty) return b;
    if (b.empty) return a;
    return Sum{a.value + b.value, std::max(a.depth, b.depth) + 1, a.look_back + b.look_back, false};
}

// An addition of two sums over runs of whole tiles, in the look-back: counted apart.
Sum look_back_add(const Sum& a, const Sum& b) {
    if (a.empty) return b;
    if (b.empty) return a;
    return Sum{a.value + b.value, std::max(a.depth, b.depth), a.look_back + b.look_back + 1, false};
}

using Scan = std::vector<Sum>;

Scan elements_of(const std::vector<float>& x) {
    Scan s(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) s[i] = element(x[i]);
    return s;
}

constexpr int kWarpSize = 32;

// Hillis-Steele across a warp with __shfl_up_sync: every lane reads the old values.
template <std::size_t kLanes>
void warp_inclusive_scan(std::array<Sum, kLanes>& lanes, std::size_t first) {
    for (int offset = 1; offset < kWarpSize; offset *= 2) {
        std::array<Sum, kWarpSize> old;
        std::copy_n(lanes.begin() + first, kWarpSize, old.begin());
        for (int lane = offset; lane < kWarpSize; ++lane) lanes[first + lane] = old[lane - offset] + old[lane];
    }
}

// ---- Rungs 1-3: block scans inside the hierarchical scheme ----------------------------
//
// A block scan fills y[0..count) from x[0..count) and returns the block total it writes
// to the block sums, exactly as the kernel computes them.

using BlockScan = Sum (*)(const Sum* x, std::size_t count, bool exclusive, Sum* y);

// hillis_steele.cu: 1024 threads, one element each, double buffered.
Sum hillis_steele_block(const Sum* x, std::size_t count, bool exclusive, Sum* y) {
    constexpr std::size_t kBlockSize = 1024;
    static std::vector<Sum> read(kBlockSize), write(kBlockSize);
    for (std::size_t t = 0; t < kBlockSize; ++t) write[t] = t < count ? x[t] : Sum{};
    for (std::size_t stride = 1; stride < kBlockSize; stride *= 2) {
        std::swap(read, write);
        for (std::size_t t = 0; t < kBlockSize; ++t) write[t] = t >= stride ? read[t - stride] + read[t] : read[t];
    }
    for (std::size_t t = 0; t < count; ++t) y[t] = exclusive ? (t == 0 ? Sum{} : write[t - 1]) : write[t];
    return write[kBlockSize - 1];
}

// blelloch.cu: 1024 threads, 2048-element sections, the lecture's index form.
Sum blelloch_block(const Sum* x, std::size_t count, bool exclusive, Sum* y) {
    constexpr unsigned kThreads = 1024, kSection = 2 * kThreads;
    static std::vector<Sum> XY(kSection);
    for (unsigned k = 0; k < kSection; ++k) XY[k] = k < count ? x[k] : Sum{};
    for (unsigned stride = 1; stride < kSection; stride *= 2)
        for (unsigned t = 0; t < kThreads; ++t) {
            const unsigned index = (t + 1) * stride * 2 - 1;
            if (index < kSection) XY[index] = XY[index] + XY[index - stride];
        }
    for (unsigned stride = kSection / 4; stride > 0; stride /= 2)
        for (unsigned t = 0; t < kThreads; ++t) {
            const unsigned index = (t + 1) * stride * 2 - 1;
            if (index + stride < kSection) XY[index + stride] = XY[index + stride] + XY[index];
        }
    for (unsigned k = 0; k < count; ++k) y[k] = exclusive ? (k == 0 ? Sum{} : XY[k - 1]) : XY[k];
    return XY[kSection - 1];
}

// hierarchical.cu: 256 threads x 8 items; serial scan per thread, warp shuffle scan,
// serial combine of the 8 warp totals, prefix added to each item.
Sum tuned_block(const Sum* x, std::size_t count, bool exclusive, Sum* y) {
    constexpr int kThreads = 256, kItems = 8, kWarps = kThreads / kWarpSize;
    static std::vector<std::array<Sum, kItems>> items(kThreads);
    std::array<Sum, kThreads> scanned;
    for (int t = 0; t < kThreads; ++t) {
        for (int k = 0; k < kItems; ++k) {
            const std::size_t e = static_cast<std::size_t>(t) * kItems + k;
            items[t][k] = e < count ? x[e] : Sum{};
        }
        for (int k = 1; k < kItems; ++k) items[t][k] = items[t][k - 1] + items[t][k];
        scanned[t] = items[t][kItems - 1];
    }
    for (int w = 0; w < kWarps; ++w) warp_inclusive_scan(scanned, static_cast<std::size_t>(w) * kWarpSize);
    Sum tile_total;
    std::array<Sum, kWarps> warp_prefix;
    for (int w = 0; w < kWarps; ++w) {
        warp_prefix[w] = tile_total;
        tile_total = tile_total + scanned[w * kWarpSize + kWarpSize - 1];
    }
    for (int t = 0; t < kThreads; ++t) {
        const Sum lane_exclusive = t % kWarpSize == 0 ? Sum{} : scanned[t - 1];
        const Sum thread_prefix = warp_prefix[t / kWarpSize] + lane_exclusive;
        for (int k = 0; k < kItems; ++k) {
            const std::size_t e = static_cast<std::size_t>(t) * kItems + k;
            if (e >= count) break;
            const Sum local = exclusive ? (k == 0 ? Sum{} : items[t][k - 1]) : items[t][k];
            y[e] = thread_prefix + local;
        }
    }
    return tile_total;
}

// Deliberate mistakes for part (b), in level 1 of the hierarchy.
struct Fault {
    std::size_t skip_add_back_of_block = std::numeric_limits<std::size_t>::max();
    std::size_t drop_total_of_block = std::numeric_limits<std::size_t>::max();
};

// The large-vector scheme as the rungs run it: block scan (writing the block totals),
// inclusive scan of the totals one level up (recursively), add back.
Scan hierarchical_scan(const Scan& in, bool exclusive, std::size_t block, BlockScan block_scan, Fault fault = {}) {
    const std::size_t n = in.size();
    const std::size_t blocks = (n + block - 1) / block;
    Scan out(n), totals(blocks);
    for (std::size_t b = 0; b < blocks; ++b)
        totals[b] = block_scan(&in[b * block], std::min(block, n - b * block), exclusive, &out[b * block]);
    if (blocks == 1) return out;
    if (fault.drop_total_of_block < blocks) totals[fault.drop_total_of_block] = Sum{};
    const Scan scanned = hierarchical_scan(totals, false, block, block_scan);
    for (std::size_t b = 1; b < blocks; ++b) {
        if (b == fault.skip_add_back_of_block) continue;
        for (std::size_t i = b * block; i < std::min(n, (b + 1) * block); ++i) out[i] = out[i] + scanned[b - 1];
    }
    return out;
}

// ---- Rung 4: scan.cu, single pass with decoupled look-back -------------------------
//
// Tiles of 256 threads x 16 items. What a tile sees of its predecessors depends on
// timing, so the schedule decides, for each predecessor, whether its inclusive prefix
// is already published (otherwise only its aggregate is): every choice is one the GPU
// can make.

enum class Schedule {
    in_order,         // every predecessor done: each tile chains onto its neighbour's prefix
    random_lag,       // a random number of recent predecessors show only their aggregates
    aggregates_only,  // no predecessor but tile 0 done: every look-back walks to tile 0
};

const char* name_of(Schedule schedule) {
    switch (schedule) {
        case Schedule::in_order: return "in order";
        case Schedule::random_lag: return "random lag";
        case Schedule::aggregates_only: return "aggregates only";
    }
    return "?";
}

Scan look_back_scan(const Scan& in, bool exclusive, Schedule schedule, std::uint64_t seed) {
    constexpr int kThreads = 256, kItems = 16, kWarps = kThreads / kWarpSize;
    constexpr std::size_t kTile = static_cast<std::size_t>(kThreads) * kItems;
    const std::size_t n = in.size();
    const std::size_t tiles = (n + kTile - 1) / kTile;
    std::vector<Sum> aggregate(tiles), inclusive_prefix(tiles);
    std::uint64_t state = seed;
    Scan out(n);
    static std::vector<std::array<Sum, kItems>> items(kThreads);
    for (std::size_t tile = 0; tile < tiles; ++tile) {
        const std::size_t tile_begin = tile * kTile;
        // Local: serial thread totals, warp scans, serial combine of the warp totals.
        std::array<Sum, kThreads> scanned;
        for (int t = 0; t < kThreads; ++t) {
            for (int k = 0; k < kItems; ++k) {
                const std::size_t i = tile_begin + static_cast<std::size_t>(t) * kItems + k;
                items[t][k] = i < n ? in[i] : Sum{};
            }
            Sum thread_total = items[t][0];
            for (int k = 1; k < kItems; ++k) thread_total = thread_total + items[t][k];
            scanned[t] = thread_total;
        }
        for (int w = 0; w < kWarps; ++w) warp_inclusive_scan(scanned, static_cast<std::size_t>(w) * kWarpSize);
        Sum tile_aggregate;
        std::array<Sum, kWarps> warp_prefix;
        for (int w = 0; w < kWarps; ++w) {
            warp_prefix[w] = tile_aggregate;
            tile_aggregate = tile_aggregate + scanned[w * kWarpSize + kWarpSize - 1];
        }
        aggregate[tile] = tile_aggregate;

        // Look-back, a window of 32 predecessors at a time.
        Sum prefix;
        if (tile == 0) {
            inclusive_prefix[0] = tile_aggregate;
        } else {
            const std::size_t lag = schedule == Schedule::random_lag ? splitmix64(state) % 80 : 0;
            for (long long window_end = static_cast<long long>(tile);; window_end -= kWarpSize) {
                std::array<Sum, kWarpSize> value;
                std::array<bool, kWarpSize> is_prefix;
                for (int lane = 0; lane < kWarpSize; ++lane) {
                    const long long predecessor = window_end - 1 - lane;
                    if (predecessor < 0) {
                        is_prefix[lane] = true;
                        value[lane] = Sum{};
                        continue;
                    }
                    const std::size_t distance = tile - static_cast<std::size_t>(predecessor);
                    bool done = true;  // tile 0 publishes its prefix at once, never an aggregate
                    if (schedule == Schedule::aggregates_only) done = predecessor == 0;
                    if (schedule == Schedule::random_lag)
                        done = predecessor == 0 || distance > lag || splitmix64(state) % 4 == 0;
                    is_prefix[lane] = done;
                    value[lane] = done ? inclusive_prefix[predecessor] : aggregate[predecessor];
                }
                const int last_lane = static_cast<int>(
                    std::find(is_prefix.begin(), is_prefix.end(), true) - is_prefix.begin());
                for (int lane = std::min(last_lane, kWarpSize - 1) + 1; lane < kWarpSize; ++lane) value[lane] = Sum{};
                for (int offset = 1; offset < kWarpSize; offset *= 2) {
                    const std::array<Sum, kWarpSize> old = value;
                    for (int lane = 0; lane < kWarpSize; ++lane)
                        value[lane] = look_back_add(old[lane], old[lane ^ offset]);
                }
                prefix = look_back_add(value[0], prefix);
                if (last_lane < kWarpSize) break;
            }
            inclusive_prefix[tile] = look_back_add(prefix, tile_aggregate);
        }

        // Each thread scans its items, seeded with its prefix.
        for (int t = 0; t < kThreads; ++t) {
            const Sum lane_exclusive = t % kWarpSize == 0 ? Sum{} : scanned[t - 1];
            Sum running = prefix + (warp_prefix[t / kWarpSize] + lane_exclusive);
            for (int k = 0; k < kItems; ++k) {
                const std::size_t i = tile_begin + static_cast<std::size_t>(t) * kItems + k;
                const Sum before = running;
                running = running + items[t][k];
                if (i < n) out[i] = exclusive ? before : running;
            }
        }
    }
    return out;
}

// ---- Checking a result against the reference ---------------------------------------

struct Reference {
    std::vector<double> expected, allowed;
};

Reference reference_for(const std::vector<float>& x, ScanKind kind) {
    Reference r{std::vector<double>(x.size()), std::vector<double>(x.size())};
    scan_bound::reference_scan_float(x.data(), x.size(), kind, r.expected.data(), r.allowed.data());
    return r;
}

struct Verdict {
    std::size_t mismatches = 0;
    std::size_t first_mismatch = 0;
    double worst_ratio = 0.0;  // largest |error| / allowed over the outputs
};

Verdict judge(const std::vector<float>& got, const Reference& r) {
    Verdict v;
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (!scan_bound::prefix_within_bound(got[i], r.expected[i], r.allowed[i])) {
            if (v.mismatches++ == 0) v.first_mismatch = i;
            continue;
        }
        const double error = std::fabs(static_cast<double>(got[i]) - r.expected[i]);
        if (r.allowed[i] > 0.0) v.worst_ratio = std::max(v.worst_ratio, error / r.allowed[i]);
    }
    return v;
}

std::vector<float> values_of(const Scan& s) {
    std::vector<float> v(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) v[i] = s[i].value;
    return v;
}

// Every output of a simulated rung: inside the bound, and formed within the counts the
// bound assumes.
struct RungReport {
    Verdict verdict;
    int max_depth = 0;
    std::size_t depth_violations = 0, look_back_violations = 0;
};

RungReport check_rung(const Scan& result, const std::vector<float>& x, ScanKind kind) {
    RungReport report;
    report.verdict = judge(values_of(result), reference_for(x, kind));
    const std::size_t n = x.size();
    for (std::size_t i = 0; i < n; ++i) {
        report.max_depth = std::max(report.max_depth, result[i].depth);
        if (static_cast<std::size_t>(result[i].depth) > scan_bound::addition_depth_bound(n))
            ++report.depth_violations;
        if (static_cast<std::size_t>(result[i].look_back) > scan_bound::look_back_additions_bound(i))
            ++report.look_back_violations;
    }
    return report;
}

const std::vector<std::size_t> kSizes = {1, 2, 31, 1000, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 100003};
const std::vector<Input> kInputs = {Input::positive, Input::mixed_signs, Input::one_large, Input::large_cancelled};

// Runs one rung on every size in kSizes (every input, both kinds) and on its large sizes
// (two runs each, to keep the test fast: mixed signs inclusive, one large exclusive).
template <typename Run>
void check_every_output(const char* rung, const std::vector<std::size_t>& large_sizes, Run run) {
    double worst_ratio = 0.0;
    int max_depth = 0;
    auto one = [&](std::size_t n, Input input, ScanKind kind) {
        const std::vector<float> x = make_input(input, n, 0x5eed0000 + n);
        const RungReport report = check_rung(run(elements_of(x), kind == ScanKind::exclusive), x, kind);
        INFO(rung << ", n = " << n << ", " << name_of(input) << ", "
                  << (kind == ScanKind::exclusive ? "exclusive" : "inclusive")
                  << ", first mismatch at " << report.verdict.first_mismatch);
        CHECK(report.verdict.mismatches == 0);
        CHECK(report.depth_violations == 0);
        CHECK(report.look_back_violations == 0);
        worst_ratio = std::max(worst_ratio, report.verdict.worst_ratio);
        max_depth = std::max(max_depth, report.max_depth);
    };
    for (std::size_t n : kSizes)
        for (Input input : kInputs)
            for (ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive}) one(n, input, kind);
    for (std::size_t n : large_sizes) {
        one(n, Input::mixed_signs, ScanKind::inclusive);
        one(n, Input::one_large, ScanKind::exclusive);
    }
    std::printf("  %-44s deepest path %2d additions (d(2^22) = %zu), worst error / allowed %.3f\n", rung,
                max_depth, scan_bound::addition_depth_bound(std::size_t{1} << 22), worst_ratio);
}

// The correctly rounded float of each exact prefix: the best any float scan could do.
std::vector<float> rounded(const Reference& r) {
    std::vector<float> v(r.expected.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(r.expected[i]);
    return v;
}

}  // namespace

// ---- (a) the real summation orders land inside the bound -----------------------------

TEST_CASE("the sequential order lands inside the bound for short vectors") {
    // y_i = y_{i-1} + x_i: a chain of i additions, inside the contract while i <= 64.
    for (Input input : kInputs) {
        const std::vector<float> x = make_input(input, 65, 7);
        std::vector<float> y(x.size());
        float running = 0.0f;
        for (std::size_t i = 0; i < x.size(); ++i) y[i] = running += x[i];
        INFO(name_of(input));
        CHECK(judge(y, reference_for(x, ScanKind::inclusive)).mismatches == 0);
    }
}

TEST_CASE("the correctly rounded result passes") {
    for (Input input : kInputs)
        for (ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive}) {
            const Reference r = reference_for(make_input(input, 100003, 11), kind);
            INFO(name_of(input));
            CHECK(judge(rounded(r), r).mismatches == 0);
        }
}

TEST_CASE("rung 1, Hillis-Steele-Horn: every output inside the bound") {
    // 2^20 + 1 is above 1024^2: three levels.
    check_every_output("hillis_steele.cu, 1024 per block", {(1u << 20) + 1}, [](const Scan& x, bool exclusive) {
        return hierarchical_scan(x, exclusive, 1024, hillis_steele_block);
    });
}

TEST_CASE("rung 2, Blelloch: every output inside the bound") {
    // 2^22 + 1 is above 2048^2: three levels.
    check_every_output("blelloch.cu, 2048 per section", {(1u << 22) + 1}, [](const Scan& x, bool exclusive) {
        return hierarchical_scan(x, exclusive, 2048, blelloch_block);
    });
}

TEST_CASE("rung 3, tuned hierarchical: every output inside the bound") {
    check_every_output("hierarchical.cu, 256 x 8 per tile", {(1u << 22) + 1}, [](const Scan& x, bool exclusive) {
        return hierarchical_scan(x, exclusive, 2048, tuned_block);
    });
}

TEST_CASE("rung 4, decoupled look-back: every output inside the bound, whatever the timing") {
    // In order, the tile chain is longest: 1024 tiles at 2^22.
    for (Schedule schedule : {Schedule::in_order, Schedule::random_lag, Schedule::aggregates_only}) {
        const std::string rung = std::string("scan.cu, 256 x 16 per tile, ") + name_of(schedule);
        const std::size_t large = schedule == Schedule::in_order ? std::size_t{1} << 22 : (std::size_t{1} << 20) + 1;
        check_every_output(rung.c_str(), {large}, [schedule](const Scan& x, bool exclusive) {
            return look_back_scan(x, exclusive, schedule, 0xabcdef + x.size());
        });
    }
}

TEST_CASE("the look-back additions are counted apart: the tile term matters only across tiles") {
    // In order, output i of tile t has exactly t - 1 look-back additions behind it.
    const std::vector<float> x = make_input(Input::mixed_signs, 5 * 4096 + 17, 3);
    const Scan y = look_back_scan(elements_of(x), false, Schedule::in_order, 1);
    CHECK(y[4095].look_back == 0);
    CHECK(y[4096].look_back == 0);  // tile 1: just tile 0's prefix, no addition yet
    CHECK(y[2 * 4096].look_back == 1);
    CHECK(y[5 * 4096 + 16].look_back == 4);
}

// ---- (b) plain wrong answers fall outside ----------------------------------------------

TEST_CASE("inclusive where exclusive was asked, and the other way round, fail") {
    for (Input input : {Input::positive, Input::mixed_signs})
        for (std::size_t n : {2, 31, 1000}) {
            const std::vector<float> x = make_input(input, n, 21);
            const Reference inclusive = reference_for(x, ScanKind::inclusive);
            const Reference exclusive = reference_for(x, ScanKind::exclusive);
            INFO(name_of(input) << ", n = " << n);
            CHECK(judge(rounded(inclusive), exclusive).mismatches > 0);
            CHECK(judge(rounded(exclusive), inclusive).mismatches > 0);
        }
}

TEST_CASE("a block whose prefix is never added back fails") {
    for (Input input : kInputs) {
        const std::vector<float> x = make_input(input, 10000, 31);
        Fault fault;
        fault.skip_add_back_of_block = 2;
        const Scan y = hierarchical_scan(elements_of(x), false, 2048, tuned_block, fault);
        const Verdict v = judge(values_of(y), reference_for(x, ScanKind::inclusive));
        INFO(name_of(input));
        CHECK(v.mismatches > 0);
        CHECK(v.first_mismatch >= 2 * 2048);
    }
}

TEST_CASE("a block scanned but its total never added to the later blocks fails") {
    for (Input input : kInputs) {
        const std::vector<float> x = make_input(input, 10000, 41);
        Fault fault;
        fault.drop_total_of_block = 0;
        const Scan y = hierarchical_scan(elements_of(x), true, 2048, tuned_block, fault);
        const Verdict v = judge(values_of(y), reference_for(x, ScanKind::exclusive));
        INFO(name_of(input));
        CHECK(v.mismatches > 0);
        CHECK(v.first_mismatch >= 2048);
    }
}

TEST_CASE("zeros fail") {
    for (Input input : kInputs) {
        const std::vector<float> x = make_input(input, 1000, 51);
        INFO(name_of(input));
        CHECK(judge(std::vector<float>(x.size(), 0.0f), reference_for(x, ScanKind::inclusive)).mismatches > 0);
    }
}

TEST_CASE("NaN and Inf never pass when the reference is finite") {
    const std::vector<float> x = make_input(Input::mixed_signs, 1000, 61);
    const Reference r = reference_for(x, ScanKind::inclusive);
    for (float poison : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity()}) {
        std::vector<float> y = rounded(r);
        y[500] = poison;
        const Verdict v = judge(y, r);
        CHECK(v.mismatches == 1);
        CHECK(v.first_mismatch == 500);
        CHECK_FALSE(scan_bound::prefix_within_bound(poison, 1.0, std::numeric_limits<double>::infinity()));
    }
}

TEST_CASE("the bound itself: zero with nothing to round, growing with depth and tiles") {
    CHECK(scan_bound::scan_error_bound(0, 0.0, 0.0, 1) == 0.0);
    CHECK(scan_bound::addition_depth_bound(1) == scan_bound::kMaxSerialChain);
    CHECK(scan_bound::addition_depth_bound(1u << 28) == scan_bound::kMaxSerialChain + 56);
    CHECK(scan_bound::look_back_additions_bound(2047) == 0);
    CHECK(scan_bound::look_back_additions_bound(2048) == 1);
    // With mixed signs the tile term uses 2 max|prefix|, far below sum|x|.
    const double tight = scan_bound::scan_error_bound(1u << 22, 2.0e6, 3.0e3, 1u << 23);
    const double loose = scan_bound::scan_error_bound(1u << 22, 2.0e6, 2.0e6, 1u << 23);
    CHECK(tight < loose / 10);
}

TEST_CASE("the integer references are exact") {
    const std::vector<int> x = {3, -1, 2147483000, -2147483000, 7};
    std::vector<std::int64_t> inclusive(x.size()), exclusive(x.size());
    scan_bound::reference_scan_int(x.data(), x.size(), ScanKind::inclusive, inclusive.data());
    scan_bound::reference_scan_int(x.data(), x.size(), ScanKind::exclusive, exclusive.data());
    CHECK(inclusive == std::vector<std::int64_t>{3, 2, 2147483002, 2, 9});
    CHECK(exclusive == std::vector<std::int64_t>{0, 3, 2, 2147483002, 2});
    CHECK(scan_bound::int_prefix_matches(9, inclusive[4]));
    CHECK_FALSE(scan_bound::int_prefix_matches(2, inclusive[4]));  // the exclusive answer
}
