// Tests of lab vector_add's CPU side: the cases from lab.toml reach the harness, the
// inputs are reproducible from the seed, and the reference is c = a + b in float.
#include <doctest/doctest.h>

#include "lab_spec.hpp"
#include "problem.hpp"

TEST_CASE("test_vector_add_spec_reaches_the_harness") {
    const auto p = lab_vector_add::problem();
    CHECK(p.name == "vector_add");
    REQUIRE(p.find("n_257"));
    CHECK(p.find("n_257")->param("n") == 257);
    CHECK(p.bytes_moved(*p.find("n_2p28")) == 12.0 * 268435456.0);
    REQUIRE(p.outputs.size() == 1);
    CHECK(p.outputs[0].tolerance.ulp == 0);
}

TEST_CASE("test_vector_add_inputs_depend_only_on_the_seed") {
    const auto p = lab_vector_add::problem();
    const auto& c = *p.find("n_1025");
    const auto x = labkit::make_host_inputs(p, c, 42), y = labkit::make_host_inputs(p, c, 42), z = labkit::make_host_inputs(p, c, 43);
    CHECK(x[0].bytes == y[0].bytes);
    CHECK(x[1].bytes == y[1].bytes);
    CHECK(x[0].bytes != z[0].bytes);
    CHECK(x[0].bytes != x[1].bytes);  // a and b are different streams
    CHECK(x[0].size() == 1025);
}

TEST_CASE("test_vector_add_reference_is_the_float_sum") {
    const auto p = lab_vector_add::problem();
    const auto& c = *p.find("n_31");
    const auto inputs = labkit::make_host_inputs(p, c, 7);
    const auto expected = lab_vector_add::reference(c, inputs);
    REQUIRE(expected.size() == 1);
    const auto a = inputs[0].as<float>(), b = inputs[1].as<float>();
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(expected[0].values[i] == static_cast<double>(a[i] + b[i]));
}
