// Tests of lab sort's reference: the stable order, and feedback that says where the order
// or the stability of a student's sort first breaks.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "labkit/compare.hpp"
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
