// Tests of the test of the whole product on lab occupancy's two multiplies (c and
// c_fixed, labkit/matmul_reference.hpp), through the checker's own reference
// (lab_occupancy::reference) and comparison, at every k of the lab's matmul cases and of
// its bench case: every float32 order of the multiply-adds passes (one running sum, a
// partial sum per tile of 16 or 32, k split in 2 to 8, each with and without FMA), and
// inputs rounded to TF32, bf16 or fp16 and accumulated in float fail: where each element's
// bound lets them through (TF32 and fp16 from k = 1000, bf16 from k = 4096), the test of
// the whole product fails them, ten times over its limit or more. A case
// whose product is large keeps its k and its inputs' distribution on fewer rows and
// columns; the ratios of the statistic to its limit are printed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "labkit/compare.hpp"
#include "problem.hpp"
#include "tests/testkit/float_dot.hpp"

namespace {

constexpr std::uint64_t kSimulatedMultiplyAdds = std::uint64_t{1} << 22;

std::string ratio_text(double ratio) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", ratio);
    return text;
}

}  // namespace

TEST_CASE("test_occupancy_precision_float32_passes_and_lower_precision_fails_at_every_k") {
    const auto p = lab_occupancy::problem();
    std::vector<labkit::CaseSpec> products;
    for (const auto& spec : p.cases)
        if (lab_occupancy::part_of(spec) == lab_occupancy::Part::matmul) products.push_back(spec);
    products.insert(products.end(), p.bench_cases.begin(), p.bench_cases.end());
    REQUIRE(products.size() == 10);  // the nine matmul cases and matmul_4096

    std::string table = "statistic / limit\n";
    for (labkit::CaseSpec spec : products) {
        auto m = static_cast<std::uint64_t>(spec.param("m")), n = static_cast<std::uint64_t>(spec.param("n"));
        const auto k = static_cast<std::uint64_t>(spec.param("k"));
        if (m * n * k > kSimulatedMultiplyAdds) {
            const auto side = std::max<std::uint64_t>(
                16, static_cast<std::uint64_t>(std::sqrt(static_cast<double>(kSimulatedMultiplyAdds / k))));
            m = std::min(m, side);
            n = std::min(n, side);
            for (auto& [key, value] : spec.params) {
                if (key == "m") value = static_cast<std::int64_t>(m);
                if (key == "n") value = static_cast<std::int64_t>(n);
            }
        }
        CAPTURE(spec.name);
        CAPTURE(k);
        const auto inputs = labkit::make_host_inputs(p, spec, 17);
        const std::vector<float> a(inputs[0].as<float>().begin(), inputs[0].as<float>().end());
        const std::vector<float> b_columns = testkit::columns_of(inputs[1].as<float>().data(), k, n);
        const auto expected = lab_occupancy::reference(spec, inputs);
        REQUIRE(expected.size() == (lab_occupancy::is_bench_case(spec) ? 1u : 2u));  // c, and c_fixed

        // The verdict on every product output of the case, each computed with `arithmetic`:
        // the worst statistic over its limit, whether all passed, whether every element
        // was within its bound.
        struct Outcome {
            double over_limit = 0.0;
            bool passed = true, within_bounds = true;
        };
        const auto judge = [&](const testkit::Arithmetic& arithmetic) {
            Outcome outcome;
            const auto c = testkit::product(arithmetic, a, b_columns, m, n, k);
            for (const auto& e : expected) {
                auto got = labkit::HostArray::make<float>(e.name, {m, n});
                std::copy(c.begin(), c.end(), got.as<float>().begin());
                const auto report = labkit::compare_within_tolerance(e, got, p.output(e.name).tolerance);
                REQUIRE(report.rms_error);
                outcome.over_limit = std::max(outcome.over_limit, *report.rms_error / report.rms_limit);
                outcome.passed = outcome.passed && report.passed;
                outcome.within_bounds = outcome.within_bounds && report.mismatches == 0;
                if (arithmetic.is_float32()) CHECK_MESSAGE(report.passed, report.message);
            }
            return outcome;
        };

        double worst_float32 = 0.0;
        for (const auto& arithmetic : testkit::float32_arithmetics()) {
            CAPTURE(arithmetic.name());
            const Outcome outcome = judge(arithmetic);
            CHECK(outcome.passed);
            worst_float32 = std::max(worst_float32, outcome.over_limit);
        }
        CHECK(worst_float32 < 0.25);
        table += spec.name + " (k = " + std::to_string(k) + "): float32 worst " + ratio_text(worst_float32);
        for (const auto& arithmetic : testkit::lower_precision_arithmetics()) {
            CAPTURE(arithmetic.name());
            const Outcome outcome = judge(arithmetic);
            CHECK_FALSE(outcome.passed);
            if (outcome.within_bounds) CHECK(outcome.over_limit > 10.0);
            if (arithmetic.order == testkit::Order::running_sum)
                table += "; " + arithmetic.name().substr(0, 4) + " " + ratio_text(outcome.over_limit) +
                         (outcome.within_bounds ? " (bound alone: passes)" : " (bound alone: fails)");
        }
        table += "\n";
    }
    MESSAGE(table);
}
