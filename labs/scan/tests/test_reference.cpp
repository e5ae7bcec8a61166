// Tests of lab scan's reference, the blocked scan that the checker spreads over the cores,
// against the sequential scan of bound.hpp (scan_bound::reference_scan_float and
// reference_scan_int), on any number of parts, including more parts than elements:
//   * integer prefixes, and float prefixes whose sums are exact, are the same bit for bit;
//   * other float prefixes differ at most in the last bit or two of a double, far below
//     the reference's own allowance (2^-50 of the sum of magnitudes), and so do the bounds;
//   * one part is the sequential scan, bit for bit;
//   * infinities and NaN come out where the sequential scan has them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "bound.hpp"
#include "labkit/generate.hpp"
#include "labkit/parallel.hpp"
#include "problem.hpp"

using scan_bound::ScanKind;

namespace {

enum class Input { small_integers, mixed_signs, one_large, infinities };

std::vector<float> make_input(Input input, std::size_t n) {
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) {
        const double u = labkit::random_unit(3, static_cast<std::uint64_t>(input), i);
        switch (input) {
            case Input::small_integers: x[i] = static_cast<float>(std::floor(17.0 * u) - 8.0); break;
            case Input::mixed_signs: x[i] = static_cast<float>(2.0 * u - 1.0); break;
            case Input::one_large: x[i] = i == 0 ? 0x1p24f : static_cast<float>(u); break;
            case Input::infinities: x[i] = static_cast<float>(2.0 * u - 1.0); break;
        }
    }
    if (input == Input::infinities && n >= 3) {
        x[n / 3] = std::numeric_limits<float>::infinity();
        x[2 * n / 3] = -std::numeric_limits<float>::infinity();  // +Inf - Inf: NaN from here on
    }
    return x;
}

labkit::HostArray floats(const std::vector<float>& x) {
    auto a = labkit::HostArray::make<float>("x", {x.size()});
    std::copy(x.begin(), x.end(), a.as<float>().begin());
    return a;
}

struct Sequential {
    std::vector<double> values, allowed, near_miss, abs_sum;
};

Sequential sequential_scan(const std::vector<float>& x, ScanKind kind) {
    const std::size_t n = x.size();
    Sequential s{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
    scan_bound::reference_scan_float(x.data(), n, kind, s.values.data(), s.allowed.data(), s.near_miss.data());
    scan_bound::PrefixReference magnitudes;
    for (std::size_t i = 0; i < n; ++i) {
        if (kind == ScanKind::inclusive) magnitudes.add(x[i]);
        s.abs_sum[i] = magnitudes.abs_sum();
        if (kind == ScanKind::exclusive) magnitudes.add(x[i]);
    }
    return s;
}

bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// Within two units in the last place of a double, and far inside the 2^-50 * sum|x| the
// reference is allowed.
bool close(double got, double want, double abs_sum) {
    if (!std::isfinite(want)) return same(got, want);
    return std::fabs(got - want) <= 0x1p-52 * std::fabs(want) + 0x1p-70 * abs_sum;
}

const std::size_t kSizes[] = {0, 1, 2, 3, 1000, (std::size_t(1) << 17) + 5};
const std::size_t kParts[] = {1, 2, 3, 7, 32};

}  // namespace

TEST_CASE("test_scan_reference_in_parts_matches_the_sequential_scan") {
    for (const Input input : {Input::small_integers, Input::mixed_signs, Input::one_large, Input::infinities}) {
        for (const std::size_t n : kSizes) {
            const auto x = make_input(input, n);
            const labkit::CaseSpec spec{"t", {{"n", static_cast<std::int64_t>(n)}, {"integer", 0},
                                              {"inclusive", 1}, {"exclusive", 1}, {"dist", 0}}};
            const Sequential want[] = {sequential_scan(x, ScanKind::inclusive),
                                       sequential_scan(x, ScanKind::exclusive)};
            for (const std::size_t parts : kParts) {
                const labkit::ForcedPartsForTesting forced(parts);
                const auto got = lab_scan::reference(spec, {floats(x)});
                REQUIRE(got.size() == 2);
                // Exact sums, or one part: the sequential scan's every bit.
                const bool bit_for_bit = input == Input::small_integers || parts == 1;
                for (std::size_t k = 0; k < 2; ++k) {
                    const auto& e = got[k];
                    const auto& w = want[k];
                    REQUIRE(e.values.size() == n);
                    REQUIRE(e.allowed_abs.size() == n);
                    REQUIRE(e.near_miss_abs.size() == n);
                    std::size_t wrong = 0, first_wrong = n;
                    for (std::size_t i = 0; i < n; ++i) {
                        const bool ok =
                            bit_for_bit ? same(e.values[i], w.values[i]) && same(e.allowed_abs[i], w.allowed[i]) &&
                                              same(e.near_miss_abs[i], w.near_miss[i])
                                        : close(e.values[i], w.values[i], w.abs_sum[i]) &&
                                              close(e.allowed_abs[i], w.allowed[i], 0.0) &&
                                              close(e.near_miss_abs[i], w.near_miss[i], 0.0);
                        if (!ok && wrong++ == 0) first_wrong = i;
                    }
                    CHECK_MESSAGE(wrong == 0, e.name << " of " << n << " elements (input " << static_cast<int>(input)
                                                     << ") in " << parts << " parts: " << wrong
                                                     << " differ, the first at " << first_wrong);
                }
            }
        }
    }
}

TEST_CASE("test_scan_reference_in_parts_of_ints_is_exact") {
    for (const std::size_t n : kSizes) {
        std::vector<std::int32_t> x(n);
        for (std::size_t i = 0; i < n; ++i) x[i] = labkit::uniform_int_at(5, 0, i, -4, 9);
        auto in = labkit::HostArray::make<std::int32_t>("x", {n});
        std::copy(x.begin(), x.end(), in.as<std::int32_t>().begin());
        std::vector<std::int64_t> inclusive(n), exclusive(n);
        scan_bound::reference_scan_int(x.data(), n, ScanKind::inclusive, inclusive.data());
        scan_bound::reference_scan_int(x.data(), n, ScanKind::exclusive, exclusive.data());
        const std::vector<double> want_inclusive(inclusive.begin(), inclusive.end());
        const std::vector<double> want_exclusive(exclusive.begin(), exclusive.end());
        const labkit::CaseSpec spec{"t", {{"n", static_cast<std::int64_t>(n)}, {"integer", 1},
                                          {"inclusive", 1}, {"exclusive", 1}, {"dist", 0}}};
        for (const std::size_t parts : kParts) {
            const labkit::ForcedPartsForTesting forced(parts);
            const auto got = lab_scan::reference(spec, {in});
            REQUIRE(got.size() == 2);
            CHECK_MESSAGE(got[0].values == want_inclusive, n << " in " << parts);
            CHECK_MESSAGE(got[1].values == want_exclusive, n << " in " << parts);
        }
    }
}
