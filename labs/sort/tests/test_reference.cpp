// Tests of lab sort's reference: the stable order, and feedback that says where the order
// or the stability of a student's sort first breaks.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "labkit/compare.hpp"
#include "labkit/generate.hpp"
#include "labkit/parallel.hpp"
#include "problem.hpp"

namespace {

labkit::HostArray u32(const char* name, const std::vector<std::uint32_t>& v) {
    auto a = labkit::HostArray::make<std::uint32_t>(name, {v.size()});
    for (std::size_t i = 0; i < v.size(); ++i) a.as<std::uint32_t>()[i] = v[i];
    return a;
}

std::vector<labkit::Expected> reference_for(const std::vector<std::uint32_t>& keys) {
    std::vector<std::uint32_t> values(keys.size());
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::uint32_t>(100 + i);
    const labkit::CaseSpec spec{"t", {{"n", static_cast<std::int64_t>(keys.size())}, {"dist", 0}, {"keys", 1}, {"pairs", 1}}};
    return lab_sort::reference(spec, {u32("keys", keys), u32("values", values)});
}

std::string message(const labkit::Expected& e, const std::vector<std::uint32_t>& got) {
    return labkit::compare_within_tolerance(e, u32(e.name.c_str(), got), labkit::Tolerance{0.0, 0.0, 0}).message;
}

}  // namespace

TEST_CASE("test_sort_reference_is_the_stable_order") {
    const auto e = reference_for({5, 3, 5, 3});
    REQUIRE(e.size() == 3);
    CHECK(e[0].values == std::vector<double>{3, 3, 5, 5});
    CHECK(e[2].values == std::vector<double>{101, 103, 100, 102});  // equal keys keep their input order
}

TEST_CASE("test_sort_feedback_says_where_the_order_first_breaks") {
    const auto e = reference_for({5, 3, 5, 3});
    const std::string said = message(e[0], {3, 5, 3, 5});
    CHECK(said.find("keys[1] is wrong: expected 3, got 5") == 0);
    CHECK(said.find("the order first breaks at keys[2]: keys[1] = 5 > keys[2] = 3") != std::string::npos);
    CHECK(message(e[0], {3, 3, 5, 6}).find("the keys are in ascending order, so an element was lost, doubled or "
                                           "changed") != std::string::npos);
}

TEST_CASE("test_sort_feedback_tells_a_stability_break_from_values_left_behind") {
    const auto e = reference_for({5, 3, 5, 3});
    const std::string unstable = message(e[2], {103, 101, 100, 102});
    CHECK(unstable.find("pair_values[0] is wrong: expected 101, got 103") == 0);
    CHECK(unstable.find("stability first breaks here: key 3 is at input positions 1 and 3, and a stable sort "
                        "keeps position 1's value (101) first") != std::string::npos);
    const std::string unpaired = message(e[2], {100, 103, 101, 102});
    CHECK(unpaired.find("value 100 belongs to key 5 (input position 0), but the key here is 3: the values did not "
                        "move with their keys") != std::string::npos);
    CHECK(message(e[2], {7, 103, 100, 102}).find("pair_values[0] = 7 is no value of the input") != std::string::npos);
}

namespace {

// Keys of `n` elements drawn as the cases draw them, and harder: few distinct values (many
// ties, where stability shows), all equal, keys that differ in one byte only, descending.
std::vector<std::uint32_t> awkward_keys(int kind, std::size_t n, std::uint64_t seed) {
    std::vector<std::uint32_t> keys(n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto random = static_cast<std::uint32_t>(labkit::random_bits(seed, 0, i));
        switch (kind) {
            case 0: keys[i] = random; break;                                  // all 32 bits
            case 1: keys[i] = random % 5; break;                              // 5 values: ties everywhere
            case 2: keys[i] = 0x9E3779B9u; break;                             // all equal: no byte to sort on
            case 3: keys[i] = 0x01020304u | ((random % 3) << 16); break;      // only byte 2 differs
            case 4: keys[i] = static_cast<std::uint32_t>(n - i); break;       // descending, distinct
            default: keys[i] = (random & 0xFF000000u) | (random % 2); break;  // bytes 0 and 3, many ties
        }
    }
    return keys;
}

}  // namespace

TEST_CASE("test_sort_reference_in_parts_is_the_stable_sort") {
    // The radix sort splits the keys into parts counted and moved on several threads: on
    // any number of parts, including more parts than keys, its keys are std::sort's and its
    // pairs std::stable_sort's (values are input positions, so a tie in the wrong order shows).
    for (std::size_t n : {0, 1, 2, 3, 255, 256, 257, 1000, 65537, (1 << 17) + 3}) {
        for (int kind = 0; kind < 6; ++kind) {
            const auto keys = awkward_keys(kind, n, 11 + n);
            std::vector<std::uint32_t> positions(n);
            for (std::size_t i = 0; i < n; ++i) positions[i] = static_cast<std::uint32_t>(i);
            std::vector<std::uint32_t> sorted = keys, order = positions;
            std::sort(sorted.begin(), sorted.end());
            std::stable_sort(order.begin(), order.end(),
                             [&](std::uint32_t a, std::uint32_t b) { return keys[a] < keys[b]; });
            std::vector<double> want_keys(sorted.begin(), sorted.end()), want_values(n);
            for (std::size_t j = 0; j < n; ++j) want_values[j] = order[j];
            const labkit::CaseSpec spec{"t", {{"n", std::int64_t(n)}, {"dist", 0}, {"keys", 1}, {"pairs", 1}}};
            for (std::size_t parts : {1, 2, 3, 7, 32}) {
                const labkit::ForcedPartsForTesting forced(parts);
                const auto e = lab_sort::reference(spec, {u32("keys", keys), u32("values", positions)});
                REQUIRE(e.size() == 3);
                CHECK_MESSAGE(e[0].values == want_keys, n << " keys of kind " << kind << " in " << parts);
                CHECK_MESSAGE(e[1].values == want_keys, n << " pairs of kind " << kind << " in " << parts);
                CHECK_MESSAGE(e[2].values == want_values, n << " pairs of kind " << kind << " in " << parts);
            }
        }
    }
}
