// Tests of the test of the whole product (labkit/matmul_reference.hpp: the root mean
// square of e_ij = (c_ij - exact_ij) / Σ_p |a_ip·b_pj| over the checked elements, against
// a limit that float arithmetic stays far below), through the checker's own reference and
// comparison, at every k of the lab's cases and bench cases, on the lab's own inputs:
//
// (a) Every float32 order passes: one running sum, a partial sum per tile of 16 or 32,
//     k split in 2 to 8 partial sums added in a fixed order, each with and without FMA.
// (b) Inputs rounded to TF32, bf16 or fp16 and accumulated in float fail, at every k:
//     where the elements' bounds are wide enough to let them through (k from about 1000),
//     the test of the whole product is what fails them, by a wide margin at the bench
//     sizes. The message says what was measured and what it means.
//
// Each k is tested on the case's own inputs where its product is small; a larger product
// keeps its k and its inputs' distribution but fewer rows and columns (the statistic
// depends on k and the distribution, not on m and n), and the bench cases the checker
// samples (4096^3 and 8192^3, problem.hpp) are judged on sampled rows and columns, as
// there. The ratios of the statistic to its limit are printed: the margins quoted in the
// header.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "labkit/compare.hpp"
#include "labkit/matmul_reference.hpp"
#include "problem.hpp"
#include "tests/testkit/float_dot.hpp"

namespace {

// Multiply-adds per simulated product before a case is cut down to fewer rows and columns.
constexpr std::uint64_t kSimulatedMultiplyAdds = std::uint64_t{1} << 22;

// A case as the tests judge it: its inputs (B stored column by column, so that each
// element's operands are contiguous) and the checker's Expected for them.
struct Judged {
    std::string name;
    std::uint64_t m = 0, n = 0, k = 0;
    std::vector<float> a, b_columns;
    labkit::Expected expected;
};

Judged prepare(const labkit::CaseSpec& lab_case) {
    const auto p = lab_matmul::problem();
    auto m = static_cast<std::uint64_t>(lab_case.param("m"));
    auto n = static_cast<std::uint64_t>(lab_case.param("n"));
    const auto k = static_cast<std::uint64_t>(lab_case.param("k"));
    const bool sampled_by_the_checker = m * n * k > lab_matmul::kFullReferenceMultiplyAdds;
    labkit::CaseSpec spec = lab_case;
    if (sampled_by_the_checker) {
        m = n = 64;
    } else if (m * n * k > kSimulatedMultiplyAdds) {
        const auto side = static_cast<std::uint64_t>(std::sqrt(static_cast<double>(kSimulatedMultiplyAdds / k)));
        m = std::min(m, std::max<std::uint64_t>(side, 16));
        n = std::min(n, std::max<std::uint64_t>(side, 16));
    }
    for (auto& [key, value] : spec.params) {
        if (key == "m") value = static_cast<std::int64_t>(m);
        if (key == "n") value = static_cast<std::int64_t>(n);
    }
    const auto inputs = labkit::make_host_inputs(p, spec, 11);
    Judged judged;
    judged.name = lab_case.name;
    judged.m = m;
    judged.n = n;
    judged.k = k;
    const auto a = inputs.at(0).as<float>(), b = inputs.at(1).as<float>();
    judged.a.assign(a.begin(), a.end());
    judged.b_columns = testkit::columns_of(b.data(), k, n);
    if (sampled_by_the_checker) {
        // 8 of 64 rows and columns, as the checker samples 64 lines of 4096 or 8192.
        judged.expected = labkit::matmul_expected("c", m, n, k,
                                                  labkit::matmul_reference_sampled(a.data(), b.data(), m, n, k, 8));
    } else {
        auto expected = lab_matmul::reference(spec, inputs);
        REQUIRE(expected.size() == 1);
        judged.expected = std::move(expected[0]);
    }
    return judged;
}

struct Verdict {
    labkit::CompareReport report;
    double over_limit = 0.0;  // the statistic over its limit
};

// The checker's verdict on C computed with `arithmetic` (the elements it does not check
// are left NaN: they must not matter).
Verdict judge(const Judged& x, const testkit::Arithmetic& arithmetic) {
    auto got = labkit::HostArray::make<float>("c", {x.m, x.n});
    const auto c = testkit::product(arithmetic, x.a, x.b_columns, x.m, x.n, x.k, x.expected.only);
    std::copy(c.begin(), c.end(), got.as<float>().begin());
    Verdict v{labkit::compare_within_tolerance(x.expected, got, lab_matmul::problem().output("c").tolerance)};
    REQUIRE(v.report.rms_error);
    v.over_limit = *v.report.rms_error / v.report.rms_limit;
    return v;
}

// Every case and bench case of the lab, in the order of lab.toml.
std::vector<labkit::CaseSpec> every_case() {
    const auto p = lab_matmul::problem();
    std::vector<labkit::CaseSpec> all = p.cases;
    all.insert(all.end(), p.bench_cases.begin(), p.bench_cases.end());
    return all;
}

std::string ratio_text(double ratio) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", ratio);
    return text;
}

}  // namespace

TEST_CASE("test_matmul_precision_float32_passes_and_lower_precision_fails_at_every_k") {
    std::string table = "statistic / limit (bound alone: would the per-element bound pass it)\n";
    for (const auto& lab_case : every_case()) {
        const Judged x = prepare(lab_case);
        CAPTURE(x.name);
        CAPTURE(x.k);
        double worst_float32 = 0.0;
        std::string worst_name;
        for (const auto& arithmetic : testkit::float32_arithmetics()) {
            CAPTURE(arithmetic.name());
            const Verdict v = judge(x, arithmetic);
            CHECK_MESSAGE(v.report.passed, v.report.message);
            if (v.over_limit > worst_float32) {
                worst_float32 = v.over_limit;
                worst_name = arithmetic.name();
            }
        }
        // A margin of 4 or more below the limit, whatever the order; 6 beyond k = 1 (a single
        // rounded product, at most u off: 0.375 of the limit there, whatever the inputs).
        CHECK(worst_float32 < (x.k == 1 ? 0.25 : 1.0 / 6.0));
        table += x.name + " (k = " + std::to_string(x.k) + ", " + std::to_string(x.m) + " x " +
                 std::to_string(x.n) + (x.expected.only.empty() ? "" : ", sampled") + "): float32 worst " +
                 ratio_text(worst_float32) + " (" + worst_name + ")";
        for (const auto& arithmetic : testkit::lower_precision_arithmetics()) {
            CAPTURE(arithmetic.name());
            const Verdict v = judge(x, arithmetic);
            CHECK_FALSE(v.report.passed);
            // Where each element's bound lets it through, the whole product's test fails it
            // with a margin: at least 3 (the all-positive k = 1024, where a running sum's own
            // error is largest), and 10 at the bench sizes.
            if (v.report.mismatches == 0) {
                CHECK(v.report.rms_failed);
                CHECK(v.over_limit > 3.0);
            }
            if (x.k >= 4096) CHECK(v.over_limit > 10.0);
            if (arithmetic.order == testkit::Order::running_sum)
                table += "; " + arithmetic.name().substr(0, 4) + " " + ratio_text(v.over_limit) +
                         (v.report.mismatches == 0 ? " (bound alone: passes)" : " (bound alone: fails)");
        }
        table += "\n";
    }
    MESSAGE(table);
}

TEST_CASE("test_matmul_precision_the_verdict_says_what_was_measured_and_what_to_do") {
    const auto p = lab_matmul::problem();
    const Judged x = prepare(*std::find_if(p.bench_cases.begin(), p.bench_cases.end(),
                                           [](const labkit::CaseSpec& c) { return c.name == "mnk_4096"; }));
    REQUIRE(x.k == 4096);
    const Verdict tf32 = judge(x, {testkit::Order::tile_16, true, 1, testkit::Inputs::tf32});
    REQUIRE_FALSE(tf32.report.passed);
    REQUIRE(tf32.report.mismatches == 0);  // every element within its bound: the old checker passed it
    const std::string& message = tf32.report.message;
    CAPTURE(message);
    CHECK(message.find("is within its own bound, but taken together") != std::string::npos);
    CHECK(message.find("the root mean square of (c_ij - exact) / sum_p |a_ip * b_pj|") != std::string::npos);
    CHECK(message.find("dot products of length k = 4096") != std::string::npos);
    CHECK(message.find("lower precision, such as TF32, bf16 or fp16") != std::string::npos);
    CHECK(message.find("this lab asks for float32 multiply-adds") != std::string::npos);
    // The measured value and the limit, both in units of u.
    CHECK(message.find(" u, u = 2^-24)") != std::string::npos);
    // The limit for the lab's mixed-sign inputs: about 2.9 u, the same at every k.
    const double limit_in_u = tf32.report.rms_limit * labkit::matmul_detail::bound_per_sum_abs(x.k) / 0x1p-24;
    CHECK(limit_in_u == doctest::Approx(2.9).epsilon(0.05));
}

TEST_CASE("test_matmul_precision_limit_follows_k_and_the_coherence_of_the_products") {
    const double u = 0x1p-24;
    // Products that cancel (coherence about 16 / (9k)): about 2.9 u at every k.
    for (std::uint64_t k : {65u, 1023u, 4096u, 8192u}) {
        CAPTURE(k);
        const double limit = labkit::rms_relative_error_limit(k, 16.0 / (9.0 * static_cast<double>(k)));
        CHECK(limit / u == doctest::Approx(4.0 * std::sqrt(1.59 / 3.0)).epsilon(1e-3));
    }
    // Products of one sign (coherence 1): a running sum's partial sums grow like k, so
    // does its error, and so does the limit: 4 sqrt((1 + k/3)/3) u.
    CHECK(labkit::rms_relative_error_limit(1024, 1.0) / u == doctest::Approx(42.7).epsilon(1e-2));
    CHECK(labkit::rms_relative_error_limit(1, 1.0) / u == doctest::Approx(4.0 * 2.0 / 3.0));
}

TEST_CASE("test_matmul_precision_the_lab_inputs_have_full_mantissas") {
    // What makes lower precision visible: hardly any input is exact in TF32 or bf16.
    const auto p = lab_matmul::problem();
    for (const char* name : {"m100_n101_k99", "m1024_n1024_k1024_pos"}) {
        CAPTURE(name);
        const auto inputs = labkit::make_host_inputs(p, *p.find(name), 5);
        std::uint64_t total = 0, exact_in_tf32 = 0, exact_in_bf16 = 0;
        for (const auto& input : inputs)
            for (const float v : input.as<float>()) {
                ++total;
                exact_in_tf32 += testkit::to_tf32(v) == v;
                exact_in_bf16 += testkit::to_bf16(v) == v;
            }
        CHECK(static_cast<double>(exact_in_tf32) < 1e-3 * static_cast<double>(total));  // about 1 in 8192
        CHECK(static_cast<double>(exact_in_bf16) < 1e-4 * static_cast<double>(total));
    }
}
