// Tests of lab transpose's CPU side: the cases from lab.toml reach the harness, the
// inputs are rows x cols and reproducible from the seed, the reference is the transpose,
// and a misplaced element fails the exact comparison with its place in out named.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "lab_spec.hpp"
#include "labkit/compare.hpp"
#include "problem.hpp"

namespace {

// The reference's output as the floats a correct GPU would dump.
labkit::HostArray as_dump(const labkit::Expected& expected) {
    auto got = labkit::HostArray::make<float>("out", expected.shape);
    auto values = got.as<float>();
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(expected.values[i]);
    return got;
}

labkit::CompareReport compare(const labkit::Problem& p, const labkit::Expected& expected, const labkit::HostArray& got) {
    return labkit::compare_within_tolerance(expected, got, p.output("out").tolerance);
}

}  // namespace

TEST_CASE("test_transpose_spec_reaches_the_harness") {
    const auto p = lab_transpose::problem();
    CHECK(p.name == "transpose");
    REQUIRE(p.find("r31_c33"));
    CHECK(p.find("r31_c33")->param("rows") == 31);
    CHECK(p.find("r31_c33")->param("cols") == 33);
    CHECK(p.bytes_moved(*p.find("square_16384")) == 8.0 * 16384.0 * 16384.0);
    REQUIRE(p.outputs.size() == 1);
    CHECK(p.outputs[0].name == "out");
    CHECK(p.outputs[0].tolerance.abs == 0.0);
    CHECK(p.outputs[0].tolerance.rel == 0.0);
    CHECK(p.outputs[0].tolerance.ulp == 0);
}

TEST_CASE("test_transpose_inputs_are_rows_by_cols_and_depend_only_on_the_seed") {
    const auto p = lab_transpose::problem();
    for (const auto& spec : p.cases) {
        const auto inputs = labkit::make_host_inputs(p, spec, 1);
        REQUIRE(inputs.size() == 1);
        CHECK(inputs[0].shape == std::vector<std::uint64_t>{static_cast<std::uint64_t>(spec.param("rows")),
                                                            static_cast<std::uint64_t>(spec.param("cols"))});
    }
    const auto& c = *p.find("r1023_c1025");
    const auto x = labkit::make_host_inputs(p, c, 42), y = labkit::make_host_inputs(p, c, 42),
               z = labkit::make_host_inputs(p, c, 43);
    CHECK(x[0].bytes == y[0].bytes);
    CHECK(x[0].bytes != z[0].bytes);
}

TEST_CASE("test_transpose_small_inputs_hold_distinct_values") {
    // Equal values could hide a misplaced element; in cases of a few tiles there are none.
    const auto p = lab_transpose::problem();
    for (const char* name : {"r31_c31", "r32_c32", "r33_c33", "r31_c33", "r64_c160"}) {
        const auto inputs = labkit::make_host_inputs(p, *p.find(name), 5);
        auto values = std::vector<float>(inputs[0].as<float>().begin(), inputs[0].as<float>().end());
        std::sort(values.begin(), values.end());
        CHECK_MESSAGE(std::adjacent_find(values.begin(), values.end()) == values.end(), name);
    }
}

TEST_CASE("test_transpose_reference_of_distinct_values") {
    // A 3 x 5 matrix holding its own row-major indices: in[r][c] = 5r + c, so out[c][r],
    // at out.values[3c + r], must be 5r + c.
    const auto p = lab_transpose::problem();
    auto in = labkit::HostArray::make<float>("in", {3, 5});
    auto x = in.as<float>();
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
    const labkit::CaseSpec spec{"three_by_five", {{"rows", 3}, {"cols", 5}}};
    const auto expected = lab_transpose::reference(spec, {in});
    REQUIRE(expected.size() == 1);
    CHECK(expected[0].name == "out");
    CHECK(expected[0].shape == std::vector<std::uint64_t>{5, 3});
    CHECK(expected[0].allowed_abs.empty());
    for (std::size_t c = 0; c < 5; ++c)
        for (std::size_t r = 0; r < 3; ++r) CHECK(expected[0].values[3 * c + r] == static_cast<double>(5 * r + c));

    auto got = as_dump(expected[0]);
    CHECK(compare(p, expected[0], got).passed);

    // Two elements swapped: the first one in out's row-major order is named, by y and x.
    std::swap(got.as<float>()[3 * 1 + 2], got.as<float>()[3 * 4 + 0]);  // out[y=1, x=2] and out[y=4, x=0]
    const auto report = compare(p, expected[0], got);
    CHECK_FALSE(report.passed);
    CHECK(report.mismatches == 2);
    CHECK(report.message.rfind("out[y=1, x=2] is wrong: expected 11, got 4", 0) == 0);
}

TEST_CASE("test_transpose_reference_matches_generated_inputs_and_catches_a_copy") {
    const auto p = lab_transpose::problem();
    for (const char* name : {"r1_c1025", "r1025_c1", "r31_c33", "r1023_c1025"}) {
        const auto& spec = *p.find(name);
        const auto inputs = labkit::make_host_inputs(p, spec, 7);
        const auto x = inputs[0].as<float>();
        const auto rows = static_cast<std::size_t>(spec.param("rows")), cols = static_cast<std::size_t>(spec.param("cols"));
        const auto expected = lab_transpose::reference(spec, inputs);
        REQUIRE(expected.size() == 1);
        bool all_equal = true;
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < cols; ++c)
                all_equal = all_equal && expected[0].values[c * rows + r] == static_cast<double>(x[r * cols + c]);
        CHECK_MESSAGE(all_equal, name);
        CHECK(compare(p, expected[0], as_dump(expected[0])).passed);

        // A kernel that copies without transposing: out[0][1] should be in[1][0], and gets in[0][1].
        auto copied = labkit::HostArray::make<float>("out", {cols, rows});
        std::copy(x.begin(), x.end(), copied.as<float>().begin());
        const auto report = compare(p, expected[0], copied);
        if (rows == 1 || cols == 1) {
            CHECK_MESSAGE(report.passed, name);  // a vector's transpose has the same memory layout
        } else {
            CHECK_FALSE(report.passed);
            CHECK_MESSAGE(report.message.rfind("out[y=0, x=1] is wrong", 0) == 0, report.message);
        }
    }
}

TEST_CASE("test_transpose_an_unwritten_element_is_named") {
    const auto p = lab_transpose::problem();
    const auto& spec = *p.find("r33_c31");
    const auto expected = lab_transpose::reference(spec, labkit::make_host_inputs(p, spec, 3));
    auto got = as_dump(expected[0]);
    got.as<float>()[30 * 33 + 32] = std::numeric_limits<float>::quiet_NaN();  // out[y=30, x=32]: the last corner
    const auto report = compare(p, expected[0], got);
    CHECK_FALSE(report.passed);
    CHECK(report.message.rfind("out[y=30, x=32] is wrong", 0) == 0);
    CHECK(report.message.find("never written") != std::string::npos);
}
