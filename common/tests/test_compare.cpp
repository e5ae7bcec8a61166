// Tests of labkit/compare.hpp: tolerances, NaN/Inf handling, signed zeros, denormals,
// relative error near zero, empty arrays and the wording of the report.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include "labkit/compare.hpp"
#include "labkit/parallel.hpp"

using labkit::compare_within_tolerance;
using labkit::Expected;
using labkit::HostArray;
using labkit::Tolerance;

namespace {

HostArray floats(std::vector<float> values) {
    auto a = HostArray::make<float>("c", {values.size()});
    for (std::size_t i = 0; i < values.size(); ++i) a.as<float>()[i] = values[i];
    return a;
}

Expected expect(std::vector<double> values) {
    return Expected{"c", {values.size()}, std::move(values), {}};
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr Tolerance kExact{0.0, 0.0, 0};

}  // namespace

TEST_CASE("test_compare_exact_match_passes") {
    const auto r = compare_within_tolerance(expect({1.0, -2.5, 0.0}), floats({1.0f, -2.5f, 0.0f}), kExact);
    CHECK(r.passed);
    CHECK(r.checked == 3);
    CHECK(r.mismatches == 0);
    CHECK(r.message == "all 3 elements of c match");
}

TEST_CASE("test_compare_reports_first_and_worst_in_words") {
    const auto r = compare_within_tolerance(expect({1.0, 2.0, 3.0, 4.0}), floats({1.0f, 2.5f, 3.0f, 9.0f}), kExact);
    REQUIRE_FALSE(r.passed);
    CHECK(r.mismatches == 2);
    REQUIRE(r.first);
    CHECK(r.first->index == 1);
    REQUIRE(r.worst);
    CHECK(r.worst->index == 3);
    CHECK(r.message.find("c[1] is wrong: expected 2, got 2.5") != std::string::npos);
    CHECK(r.message.find("2 of 4 elements differ") != std::string::npos);
    CHECK(r.message.find("the worst at c[3]") != std::string::npos);
}

TEST_CASE("test_compare_nan_never_passes_by_accident") {
    CHECK_FALSE(compare_within_tolerance(expect({1.0}), floats({kNaN}), Tolerance{1e30, 1e30, 1000}).passed);
    CHECK_FALSE(compare_within_tolerance(expect({std::nan("")}), floats({1.0f}), Tolerance{1e30, 1e30, -1}).passed);
    CHECK(compare_within_tolerance(expect({std::nan("")}), floats({kNaN}), kExact).passed);
    const auto r = compare_within_tolerance(expect({1.0}), floats({kNaN}), kExact);
    CHECK(r.message.find("never written") != std::string::npos);
}

TEST_CASE("test_compare_infinities_must_match_exactly") {
    CHECK(compare_within_tolerance(expect({HUGE_VAL}), floats({kInf}), kExact).passed);
    CHECK_FALSE(compare_within_tolerance(expect({HUGE_VAL}), floats({-kInf}), Tolerance{1e30, 1, 10}).passed);
    CHECK_FALSE(compare_within_tolerance(expect({3.0e38}), floats({kInf}), Tolerance{1e30, 1, 10}).passed);
    CHECK_FALSE(compare_within_tolerance(expect({HUGE_VAL}), floats({3.4e38f}), Tolerance{1e38, 1, 1000}).passed);
}

TEST_CASE("test_compare_signed_zeros_are_equal") {
    CHECK(compare_within_tolerance(expect({0.0}), floats({-0.0f}), kExact).passed);
    CHECK(compare_within_tolerance(expect({-0.0}), floats({0.0f}), kExact).passed);
    CHECK(labkit::ulp_distance(0.0f, -0.0f) == 0);
}

TEST_CASE("test_compare_ulp_distance_counts_steps_across_zero_and_denormals") {
    const float tiny = std::numeric_limits<float>::denorm_min();
    CHECK(labkit::ulp_distance(tiny, 0.0f) == 1);
    CHECK(labkit::ulp_distance(tiny, -tiny) == 2);
    CHECK(labkit::ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)) == 1);
    CHECK(labkit::ulp_distance(1.0, std::nextafter(1.0, 0.0)) == 1);
    const float big = std::numeric_limits<float>::max();
    CHECK(labkit::ulp_distance(big, -big) == 2ull * 0x7F7FFFFFull);
}

TEST_CASE("test_compare_ulp_criterion") {
    const float one_up = std::nextafter(1.0f, 2.0f);
    CHECK_FALSE(compare_within_tolerance(expect({1.0}), floats({one_up}), kExact).passed);
    CHECK(compare_within_tolerance(expect({1.0}), floats({one_up}), Tolerance{0, 0, 1}).passed);
    const float denorm = std::numeric_limits<float>::denorm_min();
    CHECK(compare_within_tolerance(expect({0.0}), floats({denorm}), Tolerance{0, 0, 1}).passed);
    CHECK_FALSE(compare_within_tolerance(expect({0.0}), floats({2 * denorm}), Tolerance{0, 0, 1}).passed);
}

TEST_CASE("test_compare_relative_error_near_zero_needs_an_absolute_floor") {
    // With a purely relative tolerance an expected 0 admits nothing but 0 itself.
    CHECK_FALSE(compare_within_tolerance(expect({0.0}), floats({1e-30f}), Tolerance{0, 1e-3, -1}).passed);
    CHECK(compare_within_tolerance(expect({0.0}), floats({1e-30f}), Tolerance{1e-20, 1e-3, -1}).passed);
    CHECK(compare_within_tolerance(expect({1000.0}), floats({1000.5f}), Tolerance{0, 1e-3, -1}).passed);
    CHECK_FALSE(compare_within_tolerance(expect({1000.0}), floats({1002.0f}), Tolerance{0, 1e-3, -1}).passed);
}

TEST_CASE("test_compare_per_element_bounds_replace_abs_and_rel") {
    Expected e = expect({10.0, 10.0});
    e.allowed_abs = {0.5, 0.0};
    const auto r = compare_within_tolerance(e, floats({10.4f, 10.25f}), Tolerance{100, 100, 100});
    CHECK_FALSE(r.passed);
    CHECK(r.first->index == 1);
}

TEST_CASE("test_compare_empty_arrays_pass_and_sizes_must_agree") {
    CHECK(compare_within_tolerance(expect({}), floats({}), kExact).passed);
    const auto r = compare_within_tolerance(expect({1.0, 2.0}), floats({1.0f}), kExact);
    CHECK_FALSE(r.passed);
    CHECK(r.message.find("wrong size") != std::string::npos);
}

TEST_CASE("test_compare_integers_exactly") {
    auto got = HostArray::make<std::int32_t>("out", {3});
    got.as<std::int32_t>()[0] = 5;
    got.as<std::int32_t>()[1] = -7;
    got.as<std::int32_t>()[2] = 9;
    Expected e{"out", {3}, {5.0, -7.0, 8.0}, {}};
    const auto r = compare_within_tolerance(e, got, kExact);
    CHECK_FALSE(r.passed);
    CHECK(r.message.find("out[2] is wrong: expected 8, got 9") != std::string::npos);
}

TEST_CASE("test_compare_describes_two_dimensional_indices") {
    CHECK(labkit::describe_index("img", {4, 5}, 13) == "img[y=2, x=3]");
    CHECK(labkit::describe_index("c", {7}, 6) == "c[6]");
    CHECK(labkit::describe_index("t", {2, 3, 4}, 23) == "t[1, 2, 3]");
}

TEST_CASE("test_compare_sampled_elements_only_those_are_judged_and_named_by_their_place") {
    // A 2 x 3 output whose reference computed elements 1 and 5 only.
    auto got = HostArray::make<float>("c", {2, 3});
    const std::vector<float> values{9.0f, 1.0f, 9.0f, 9.0f, 9.0f, 2.0f};
    for (std::size_t i = 0; i < values.size(); ++i) got.as<float>()[i] = values[i];
    Expected sampled{"c", {2, 3}, {1.0, 2.0}, {0.5, 0.5}};
    sampled.only = {1, 5};
    const auto pass = compare_within_tolerance(sampled, got, kExact);
    CHECK(pass.passed);
    CHECK(pass.checked == 2);
    CHECK(pass.message == "all 2 sampled elements (of 6) of c match");

    sampled.values = {1.0, 4.0};
    const auto fail = compare_within_tolerance(sampled, got, kExact);
    CHECK_FALSE(fail.passed);
    REQUIRE(fail.first);
    CHECK(fail.first->index == 5);
    CHECK(fail.message.find("c[y=1, x=2] is wrong: expected 4, got 2") == 0);
    CHECK(fail.message.find("1 of 2 sampled elements (of 6) differ") != std::string::npos);

    auto short_output = HostArray::make<float>("c", {5});
    CHECK_FALSE(compare_within_tolerance(sampled, short_output, kExact).passed);  // the whole shape is required

    sampled.only = {1, 6};
    CHECK_THROWS_AS(compare_within_tolerance(sampled, got, kExact), std::logic_error);  // outside the shape
}

namespace {

// Everything a report says, to compare two reports of the same output.
std::string everything_in(const labkit::CompareReport& r) {
    const auto where = [](const std::optional<labkit::Mismatch>& m) {
        return m ? std::to_string(m->index) + ":" + labkit::format_value(m->expected) + ":" +
                       labkit::format_value(m->got) + ":" + labkit::format_value(m->allowed)
                 : std::string("none");
    };
    return std::to_string(r.passed) + "|" + std::to_string(r.checked) + "|" + std::to_string(r.mismatches) + "|" +
           where(r.first) + "|" + where(r.worst) + "|" + std::to_string(r.near_miss) + "|" + r.message;
}

}  // namespace

TEST_CASE("test_compare_in_parts_says_what_one_pass_says") {
    // The elements are judged in parts on several threads: the first mismatch, the worst
    // (the first of equally bad ones), the counts and the message must be those of one pass
    // in order, wherever the mismatches fall against the parts' boundaries.
    for (std::size_t n : {0, 1, 2, 7, 100, 3 * (1 << 18) + 5}) {
        std::vector<float> got(n);
        std::vector<double> want(n);
        for (std::size_t i = 0; i < n; ++i) got[i] = static_cast<float>(want[i] = static_cast<double>(i % 97) - 40.0);
        // Mismatches: near the end (the last part's), in the middle, and two equally bad ones
        // (the first of them is the worst), plus a NaN that was never written.
        for (std::size_t i : {n - 1, n / 2, n / 3, 2 * n / 3})
            if (i < n) got[i] = static_cast<float>(want[i] + 3.0);
        if (n > 4) got[n / 5] = kNaN;
        const auto output = floats(got);
        const Expected expected = expect(want);
        const auto report_in = [&](std::size_t parts) {
            const labkit::ForcedPartsForTesting forced(parts);
            return everything_in(compare_within_tolerance(expected, output, Tolerance{0.5, 0.0, -1}));
        };
        const std::string one_pass = report_in(1);
        for (std::size_t parts : {2, 3, 7, 32})
            CHECK_MESSAGE(report_in(parts) == one_pass, n << " elements in " << parts << " parts");
    }
    // By hand: the only mismatch lies in the last of three parts, the worst of two equal
    // ones is the first.
    const labkit::ForcedPartsForTesting forced(3);
    const auto last = compare_within_tolerance(expect({1, 2, 3, 4, 5, 6}), floats({1, 2, 3, 4, 5, 9}), kExact);
    CHECK(last.mismatches == 1);
    CHECK(last.first->index == 5);
    const auto ties = compare_within_tolerance(expect({1, 2, 3, 4, 5, 6}), floats({1, 4, 3, 4, 7, 6}), kExact);
    CHECK(ties.first->index == 1);
    CHECK(ties.worst->index == 1);
    CHECK(ties.message.find("the worst at") == std::string::npos);  // the worst is the first
}

TEST_CASE("test_compare_in_parts_a_sampled_index_outside_the_output_is_named") {
    // The reference's mistake, found by any part: the first one in its list is named.
    const labkit::ForcedPartsForTesting forced(4);
    Expected sampled{"c", {2, 3}, {1.0, 2.0, 3.0, 4.0, 5.0}, {0.5, 0.5, 0.5, 0.5, 0.5}};
    sampled.only = {0, 1, 9, 2, 7};
    try {
        compare_within_tolerance(sampled, floats({1, 2, 3, 4, 5, 6}), kExact);
        FAIL("no error for an index outside the output");
    } catch (const std::logic_error& e) {
        CHECK(std::string(e.what()) == "reference for 'c' samples element 9 of 6");
    }
}

TEST_CASE("test_compare_root_mean_square_of_the_errors_judges_the_whole_output") {
    // Four elements, each allowed 1.0 off; off by 0.5, 0.5, 0.5 and 0.5: every one within
    // its bound, and the root mean square of error / bound is 0.5.
    Expected e{"c", {4}, {1.0, 2.0, 3.0, 4.0}, {1.0, 1.0, 1.0, 1.0}};
    const auto got = floats({1.5f, 1.5f, 3.5f, 3.5f});
    const auto plain = compare_within_tolerance(e, got, kExact);
    CHECK(plain.passed);
    CHECK_FALSE(plain.rms_error);  // no limit set, nothing measured

    e.rms_limit = 0.6;
    const auto under = compare_within_tolerance(e, got, kExact);
    CHECK(under.passed);
    REQUIRE(under.rms_error);
    CHECK(*under.rms_error == doctest::Approx(0.5));
    CHECK(under.rms_limit == 0.6);
    CHECK_FALSE(under.rms_failed);
    CHECK(under.message == "all 4 elements of c match");

    e.rms_limit = 0.4;
    const auto over = compare_within_tolerance(e, got, kExact);
    CHECK_FALSE(over.passed);
    CHECK(over.rms_failed);
    CHECK(over.mismatches == 0);  // no element is wrong on its own
    CHECK_FALSE(over.first);
    CHECK(over.message ==
          "each of the 4 elements of c is within its own bound, but the root mean square of their errors is 0.5 "
          "of the allowed difference, more than the 0.4 a correct answer stays within");

    // The lab's own words, given the measured value and the limit.
    e.rms_explain = [](double rms, double limit) {
        return "rms " + labkit::format_value(rms) + " over " + labkit::format_value(limit);
    };
    CHECK(compare_within_tolerance(e, got, kExact).message ==
          "each of the 4 elements of c is within its own bound, but rms 0.5 over 0.4");

    // An element outside its bound is named first, as ever; the test of the whole is not
    // what failed.
    const auto wrong = compare_within_tolerance(e, floats({1.5f, 1.5f, 9.0f, 3.5f}), kExact);
    CHECK_FALSE(wrong.passed);
    CHECK_FALSE(wrong.rms_failed);
    CHECK(wrong.message.find("c[2] is wrong: expected 3, got 9") == 0);

    // A NaN is never averaged away: it is a wrong element.
    const auto nan = compare_within_tolerance(e, floats({1.0f, 2.0f, kNaN, 4.0f}), kExact);
    CHECK_FALSE(nan.passed);
    CHECK(nan.mismatches == 1);

    // Without a bound per element there is nothing to take the errors as a fraction of.
    Expected no_bounds = expect({1.0});
    no_bounds.rms_limit = 0.5;
    CHECK_THROWS_AS(compare_within_tolerance(no_bounds, floats({1.0f}), kExact), std::logic_error);
}

TEST_CASE("test_compare_root_mean_square_over_the_sampled_elements_only") {
    // Elements 1 and 5 are compared (off by 0.3 and 0.4 of their bounds of 1); the others
    // are far off but not sampled.
    auto got = HostArray::make<float>("c", {2, 3});
    const std::vector<float> values{9.0f, 1.3f, 9.0f, 9.0f, 9.0f, 2.4f};
    for (std::size_t i = 0; i < values.size(); ++i) got.as<float>()[i] = values[i];
    Expected sampled{"c", {2, 3}, {1.0, 2.0}, {1.0, 1.0}};
    sampled.only = {1, 5};
    sampled.rms_limit = 0.3;
    const auto r = compare_within_tolerance(sampled, got, kExact);
    REQUIRE(r.rms_error);
    CHECK(*r.rms_error == doctest::Approx(std::sqrt((0.3 * 0.3 + 0.4 * 0.4) / 2)).epsilon(1e-6));
    CHECK(r.rms_failed);
    CHECK(r.message.find("each of the 2 sampled elements (of 6) of c is within its own bound, but ") == 0);
}

TEST_CASE("test_compare_root_mean_square_is_the_same_in_any_number_of_parts") {
    const std::size_t n = 3 * (1 << 18) + 5;
    std::vector<float> got(n);
    Expected e{"c", {n}, std::vector<double>(n), std::vector<double>(n, 1.0)};
    for (std::size_t i = 0; i < n; ++i) {
        e.values[i] = static_cast<double>(i % 101);
        got[i] = static_cast<float>(e.values[i] + 0.001 * static_cast<double>(i % 7));
    }
    e.rms_limit = 0.001;
    const auto output = floats(got);
    std::optional<double> one_pass;
    {
        const labkit::ForcedPartsForTesting forced(1);
        one_pass = compare_within_tolerance(e, output, kExact).rms_error;
    }
    REQUIRE(one_pass);
    for (std::size_t parts : {2, 7, 32}) {
        const labkit::ForcedPartsForTesting forced(parts);
        const auto r = compare_within_tolerance(e, output, kExact);
        REQUIRE(r.rms_error);
        CHECK(*r.rms_error == *one_pass);  // bit for bit
    }
}
