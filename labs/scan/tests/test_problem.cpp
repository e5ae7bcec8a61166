// Tests of lab scan's CPU side: a case runs the scans it names, int inputs keep every
// prefix in range, and the references are right on a hand-checked example.
#include <doctest/doctest.h>

#include "problem.hpp"

TEST_CASE("test_scan_cases_name_their_outputs") {
    const auto p = lab_scan::problem();
    const auto& f = *p.find("n_1025");
    const auto fe = lab_scan::reference(f, labkit::make_host_inputs(p, f, 1));
    REQUIRE(fe.size() == 2);
    CHECK(fe[0].name == "inclusive");
    CHECK(fe[1].name == "exclusive");
    CHECK(fe[1].values[0] == 0.0);
    CHECK(fe[1].allowed_abs[0] == 0.0);  // out[0] of an exclusive scan must be exactly 0
    const auto& i = *p.find("int_n_1025");
    const auto ie = lab_scan::reference(i, labkit::make_host_inputs(p, i, 1));
    REQUIRE(ie.size() == 2);
    CHECK(ie[0].name == "inclusive_int");
    CHECK(ie[0].allowed_abs.empty());
    const auto& b = *p.find("n_2p26");
    CHECK(p.bytes_moved(b) == 8.0 * 67108864.0);
}

TEST_CASE("test_scan_reference_on_a_small_example") {
    const auto p = lab_scan::problem();
    const auto& spec = *p.find("int_n_1025");
    auto inputs = labkit::make_host_inputs(p, spec, 9);
    auto x = inputs[0].as<std::int32_t>();
    for (std::int32_t v : x) CHECK((v >= -4 && v <= 4));
    x[0] = 1;
    x[1] = 2;
    x[2] = 3;
    const auto e = lab_scan::reference(spec, inputs);
    CHECK(e[0].values[0] == 1.0);
    CHECK(e[0].values[2] == 6.0);
    CHECK(e[1].values[0] == 0.0);
    CHECK(e[1].values[3] == 6.0);
}
