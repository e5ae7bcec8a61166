// Tests of lab matmul's CPU side: every case's inputs have the shapes its m, n, k say
// and the values its distribution says, the models count what lab.toml says, and the
// checker's reference and comparison accept the exact product and reject the starter's
// untouched, NaN-poisoned output, naming the first element.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "labkit/compare.hpp"
#include "problem.hpp"

TEST_CASE("test_matmul_every_case_has_inputs_of_its_shape") {
    const auto p = lab_matmul::problem();
    for (const auto& spec : p.cases) {
        CAPTURE(spec.name);
        const auto m = static_cast<std::uint64_t>(spec.param("m"));
        const auto n = static_cast<std::uint64_t>(spec.param("n"));
        const auto k = static_cast<std::uint64_t>(spec.param("k"));
        const auto inputs = labkit::make_host_inputs(p, spec, 1);
        REQUIRE(inputs.size() == 2);
        CHECK(inputs[0].name == "a");
        CHECK(inputs[0].shape == std::vector<std::uint64_t>{m, k});
        CHECK(inputs[1].name == "b");
        CHECK(inputs[1].shape == std::vector<std::uint64_t>{k, n});
        const float lo = spec.param("dist") == 1 ? 0.0f : -1.0f;
        std::uint64_t outside = 0;
        for (const auto& input : inputs)
            for (const float v : input.as<float>()) outside += !(v >= lo && v < 1.0f);
        CHECK(outside == 0);
    }
}

TEST_CASE("test_matmul_inputs_of_a_and_b_differ_and_follow_the_seed") {
    const auto p = lab_matmul::problem();
    const auto& spec = *p.find("m33_n17_k65");
    const auto first = labkit::make_host_inputs(p, spec, 5);
    const auto again = labkit::make_host_inputs(p, spec, 5);
    const auto other = labkit::make_host_inputs(p, spec, 6);
    CHECK(first[0].bytes == again[0].bytes);
    CHECK(first[1].bytes == again[1].bytes);
    CHECK(first[0].bytes != other[0].bytes);
    CHECK(first[0].as<float>()[0] != first[1].as<float>()[0]);  // independent streams
}

TEST_CASE("test_matmul_models_count_bytes_and_flops") {
    const auto p = lab_matmul::problem();
    const auto& spec = *p.find("mnk_4096");
    CHECK(p.bytes_moved(spec) == 4.0 * 3.0 * 4096.0 * 4096.0);
    CHECK(p.flops(spec) == 2.0 * 4096.0 * 4096.0 * 4096.0);
    CHECK(p.find("mnk_8192") != nullptr);
    REQUIRE(p.outputs.size() == 1);
    CHECK(p.outputs[0].name == "c");
    CHECK(p.outputs[0].computed);
}

TEST_CASE("test_matmul_checker_passes_the_exact_product_and_fails_poisoned_output") {
    const auto p = lab_matmul::problem();
    const auto& spec = *p.find("m100_n101_k99");
    const auto inputs = labkit::make_host_inputs(p, spec, 11);
    const auto expected = lab_matmul::reference(spec, inputs);
    REQUIRE(expected.size() == 1);
    const labkit::Expected& c = expected[0];
    CHECK(c.name == "c");
    CHECK(c.shape == std::vector<std::uint64_t>{100, 101});
    REQUIRE(c.values.size() == 100u * 101u);
    REQUIRE(c.allowed_abs.size() == c.values.size());
    CHECK_FALSE(c.fixed_order);
    const auto tolerance = p.output("c").tolerance;

    auto got = labkit::HostArray::make<float>("c", {100, 101});
    auto out = got.as<float>();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(c.values[i]);
    CHECK(labkit::compare_within_tolerance(c, got, tolerance).passed);

    for (float& v : out) v = std::numeric_limits<float>::quiet_NaN();  // what the starter leaves
    const auto report = labkit::compare_within_tolerance(c, got, tolerance);
    CHECK_FALSE(report.passed);
    CHECK(report.mismatches == 100u * 101u);
    CHECK(report.message.find("c[y=0, x=0] is wrong: expected ") == 0);
    CHECK(report.message.find("NaN here usually means the element was never written") != std::string::npos);
}
