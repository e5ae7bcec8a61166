// Tests of lab sort's CPU side: the cases from lab.toml reach the harness, the inputs
// follow their distributions and depend only on the seed, the reference is the stable
// sort, and an unstable or wrong answer fails the exact comparison with its place named.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lab_spec.hpp"
#include "labkit/compare.hpp"
#include "problem.hpp"

namespace {

std::vector<std::uint32_t> values_of(const labkit::HostArray& a) {
    const auto s = a.as<std::uint32_t>();
    return {s.begin(), s.end()};
}

labkit::HostArray as_dump(const std::string& name, const std::vector<std::uint32_t>& v) {
    auto got = labkit::HostArray::make<std::uint32_t>(name, {v.size()});
    std::copy(v.begin(), v.end(), got.as<std::uint32_t>().begin());
    return got;
}

std::vector<std::uint32_t> as_u32(const labkit::Expected& e) {
    return std::vector<std::uint32_t>(e.values.begin(), e.values.end());
}

}  // namespace

TEST_CASE("test_sort_spec_reaches_the_harness") {
    const auto p = lab_sort::problem();
    CHECK(p.name == "sort");
    REQUIRE(p.find("n_4097"));
    CHECK(p.find("n_4097")->param("n") == 4097);
    CHECK(p.bytes_moved(*p.find("n_2p28")) == 8.0 * 268435456.0);
    REQUIRE(p.outputs.size() == 3);
    for (const auto& out : p.outputs) {
        CHECK(out.dtype == labkit::DType::u32);
        CHECK(out.tolerance.abs == 0.0);
        CHECK(out.tolerance.rel == 0.0);
    }
}

TEST_CASE("test_sort_inputs_follow_their_distributions") {
    const auto p = lab_sort::problem();
    for (const auto& spec : p.cases) {
        const auto inputs = labkit::make_host_inputs(p, spec, 3);
        REQUIRE(inputs.size() == (spec.param("pairs") ? 2u : 1u));
        const auto keys = values_of(inputs[0]);
        CHECK(keys.size() == static_cast<std::size_t>(spec.param("n")));
        if (spec.param("pairs")) {
            const auto values = values_of(inputs[1]);
            for (std::size_t i = 0; i < values.size(); ++i) REQUIRE(values[i] == i);
        }
        switch (spec.param("dist")) {
            case 1: CHECK(*std::max_element(keys.begin(), keys.end()) < 16u); break;
            case 2: CHECK(std::is_sorted(keys.begin(), keys.end())); break;
            case 3: CHECK(std::is_sorted(keys.rbegin(), keys.rend())); break;
            case 4: CHECK(std::all_of(keys.begin(), keys.end(), [&](std::uint32_t k) { return k == keys[0]; })); break;
            case 5:
                CHECK(keys.front() == 0xffffffffu);
                CHECK(keys.back() == 0u);
                break;
            default: break;
        }
    }
    const auto& c = *p.find("n_100003_extremes");
    CHECK(labkit::make_host_inputs(p, c, 42)[0].bytes == labkit::make_host_inputs(p, c, 42)[0].bytes);
    CHECK(labkit::make_host_inputs(p, c, 42)[0].bytes != labkit::make_host_inputs(p, c, 43)[0].bytes);
    // Reversed keys stay distinct and in range at the largest case.
    const auto reversed = values_of(labkit::make_host_inputs(p, *p.find("n_65537_reversed"), 1)[0]);
    CHECK(reversed.back() == 7u);
}

TEST_CASE("test_sort_reference_is_the_stable_sort") {
    auto keys = as_dump("keys", {5, 1, 5, 0, 1, 5});
    auto values = as_dump("values", {0, 1, 2, 3, 4, 5});
    const labkit::CaseSpec spec{"six", {{"n", 6}, {"dist", 1}, {"keys", 1}, {"pairs", 1}}};
    const auto expected = lab_sort::reference(spec, {keys, values});
    REQUIRE(expected.size() == 3);
    CHECK(expected[0].name == "keys");
    CHECK(as_u32(expected[0]) == std::vector<std::uint32_t>{0, 1, 1, 5, 5, 5});
    CHECK(expected[1].name == "pair_keys");
    CHECK(as_u32(expected[1]) == std::vector<std::uint32_t>{0, 1, 1, 5, 5, 5});
    CHECK(expected[2].name == "pair_values");
    CHECK(as_u32(expected[2]) == std::vector<std::uint32_t>{3, 1, 4, 0, 2, 5});
    // A pairs-only case produces no "keys".
    const labkit::CaseSpec pairs_only{"six", {{"n", 6}, {"dist", 1}, {"keys", 0}, {"pairs", 1}}};
    CHECK(lab_sort::reference(pairs_only, {keys, values}).size() == 2);
}

TEST_CASE("test_sort_unstable_values_fail_with_their_place_named") {
    const auto p = lab_sort::problem();
    auto keys = as_dump("keys", {5, 1, 5, 0, 1, 5});
    auto values = as_dump("values", {0, 1, 2, 3, 4, 5});
    const labkit::CaseSpec spec{"six", {{"n", 6}, {"dist", 1}, {"keys", 0}, {"pairs", 1}}};
    const auto expected = lab_sort::reference(spec, {keys, values});
    // The right keys, but the two 1s' values swapped: an unstable sort.
    const auto ok = labkit::compare_within_tolerance(expected[0], as_dump("pair_keys", {0, 1, 1, 5, 5, 5}),
                                                     p.output("pair_keys").tolerance);
    CHECK(ok.passed);
    const auto report = labkit::compare_within_tolerance(expected[1], as_dump("pair_values", {3, 4, 1, 0, 2, 5}),
                                                         p.output("pair_values").tolerance);
    CHECK_FALSE(report.passed);
    REQUIRE(report.first);
    CHECK(report.first->index == 1);
    CHECK(report.message.find("pair_values[1]") != std::string::npos);
}
