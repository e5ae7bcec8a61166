// Tests of lab reduction's CPU side: the cases reach the harness, the hard case is the
// lecture's, and a sequential float sum fails it while the reference bound holds.
#include <doctest/doctest.h>

#include "bound.hpp"
#include "labkit/compare.hpp"
#include "problem.hpp"

TEST_CASE("test_reduction_hard_case_defeats_a_sequential_sum") {
    const auto p = lab_reduction::problem();
    const auto& spec = *p.find("n_1025_hard");
    const auto inputs = labkit::make_host_inputs(p, spec, 3);
    const auto x = inputs[0].as<float>();
    CHECK(x[0] == 16777216.0f);
    const auto expected = lab_reduction::reference(spec, inputs);
    REQUIRE(expected.size() == 1);
    REQUIRE(expected[0].allowed_abs.size() == 1);

    float sequential = 0.0f;
    for (float v : x) sequential += v;
    auto got = labkit::HostArray::make<float>("sum", {1});
    got.as<float>()[0] = sequential;
    CHECK_FALSE(labkit::compare_within_tolerance(expected[0], got, {}).passed);

    got.as<float>()[0] = static_cast<float>(expected[0].values[0]);
    CHECK(labkit::compare_within_tolerance(expected[0], got, {}).passed);
}

TEST_CASE("test_reduction_every_case_has_inputs_of_its_size") {
    const auto p = lab_reduction::problem();
    for (const auto& spec : p.cases) {
        if (spec.param("n") > (1 << 21)) continue;  // the large ones are exercised on the GPU
        const auto inputs = labkit::make_host_inputs(p, spec, 1);
        CHECK(inputs[0].size() == static_cast<std::uint64_t>(spec.param("n")));
    }
    CHECK(p.bytes_moved(*p.find("n_2p28")) == 4.0 * 268435456.0);
}
