// Does a scan computed from elements converted to bf16 or fp16 (and added in float) pass
// the scan checker? Tested on the lab's own inputs at every float case and bench size,
// through the checker's bound (bound.hpp), for both scans a case runs:
//
// * Where the elements' signs are mixed (dist = 0: every bench case and most cases) it
//   fails at every size, at its first outputs: out[0] is x[0] itself, which the bound
//   allows to be off by a few dozen u, and converting it to bf16 or fp16 moves it by up
//   to 2^-9 or 2^-12 of itself. The first prefixes are short sums with tight bounds, and
//   the checker judges every output, so no size hides them.
// * In the hard case (dist = 1: 2^24, then values below 1) every prefix holds 2^24, and
//   the outputs themselves are floats near 2^24, 2 apart: a correct scan is off by up
//   to 1 in every output, more than what converting the small values to bf16 adds
//   (about 0.5 after 2^20 of them). bf16 passes there, and no test of the outputs could
//   tell it from float; fp16 cannot hold 2^24 (65504 at most) and fails.
//
// So the scan needs no test beyond its bound. A float scan in the same order passes
// everywhere (the control). A case of more than kWindow elements is judged on its first
// kWindow outputs, each against the bound it has at the case's real size (the bound of
// output i depends on n only through the depth the contract allows, d(n)): failing them
// fails the case, whose every output the checker judges.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bound.hpp"
#include "labkit/compare.hpp"
#include "problem.hpp"
#include "tests/testkit/lower_precision.hpp"

namespace {

constexpr std::size_t kWindow = std::size_t{1} << 16;
constexpr std::size_t kBlock = 1024;

using Round = float (*)(float);
float as_float(float x) { return x; }

// Hillis-Steele inclusive scan in place: log2(size) levels, a tree.
void hillis_steele(std::vector<float>& a) {
    for (std::size_t stride = 1; stride < a.size(); stride *= 2) {
        std::vector<float> next = a;
        for (std::size_t i = stride; i < a.size(); ++i) next[i] = a[i] + a[i - stride];
        a = std::move(next);
    }
}

// The inclusive scan of x, each element first through `round`: blocks of 1024 scanned as
// trees, the blocks' totals scanned as a tree, each block's carry added back. Output i
// depends on x[0..i] only, the same in a longer input.
std::vector<float> block_scan(const std::vector<float>& x, Round round) {
    std::vector<float> out(x.size()), totals;
    for (std::size_t begin = 0; begin < x.size(); begin += kBlock) {
        std::vector<float> block;
        for (std::size_t i = begin; i < std::min(x.size(), begin + kBlock); ++i) block.push_back(round(x[i]));
        hillis_steele(block);
        std::copy(block.begin(), block.end(), out.begin() + static_cast<std::ptrdiff_t>(begin));
        totals.push_back(block.back());
    }
    hillis_steele(totals);  // totals[b]: the sum of blocks 0..b
    for (std::size_t i = kBlock; i < x.size(); ++i) out[i] = totals[i / kBlock - 1] + out[i];
    return out;
}

// What the checker expects of the first x.size() outputs of a scan of n elements.
labkit::Expected window_reference(const std::string& name, const std::vector<float>& x, std::size_t n,
                                  scan_bound::ScanKind kind) {
    labkit::Expected e{name, {x.size()}, std::vector<double>(x.size()), std::vector<double>(x.size())};
    scan_bound::PrefixReference reference;
    for (std::size_t i = 0; i < x.size(); ++i) {
        if (kind == scan_bound::ScanKind::inclusive) reference.add(x[i]);
        e.values[i] = reference.prefix();
        e.allowed_abs[i] = scan_bound::scan_error_bound(i, reference.abs_sum(), reference.abs_max(), n);
        if (kind == scan_bound::ScanKind::exclusive) reference.add(x[i]);
    }
    return e;
}

labkit::HostArray floats(const std::string& name, const std::vector<float>& values) {
    auto a = labkit::HostArray::make<float>(name, {values.size()});
    std::copy(values.begin(), values.end(), a.as<float>().begin());
    return a;
}

// The root mean square over the outputs of (got - exact) / allowed.
double rms_of_bound(const labkit::Expected& e, const std::vector<float>& got) {
    double sum = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double ratio = (static_cast<double>(got[i]) - e.values[i]) / e.allowed_abs[i];
        sum += ratio * ratio;
    }
    return std::sqrt(sum / static_cast<double>(got.size()));
}

// "passes", or "fails at out[i]" with the first output outside its bound.
std::string outcome(const labkit::CompareReport& report) {
    return report.passed ? "passes" : "fails at " + std::to_string(report.first ? report.first->index : 0);
}

}  // namespace

TEST_CASE("test_scan_precision_lower_precision_fails_wherever_signs_mix") {
    const auto p = lab_scan::problem();
    std::vector<labkit::CaseSpec> all = p.cases;
    all.insert(all.end(), p.bench_cases.begin(), p.bench_cases.end());
    std::string table = "the first output outside its bound\n";
    for (const auto& spec : all) {
        if (spec.param("integer") != 0) continue;  // integer scans are exact
        CAPTURE(spec.name);
        const auto n = static_cast<std::size_t>(spec.param("n"));
        const std::size_t window = std::min(n, kWindow);
        labkit::CaseSpec head = spec;
        for (auto& [key, value] : head.params)
            if (key == "n") value = static_cast<std::int64_t>(window);
        const auto inputs = labkit::make_host_inputs(p, head, 37);  // the first `window` elements of the case
        const std::vector<float> x(inputs[0].as<float>().begin(), inputs[0].as<float>().end());

        std::vector<labkit::Expected> expected;
        if (window == n) {
            expected = lab_scan::reference(spec, inputs);  // the checker's own
        } else {
            if (spec.param("inclusive") != 0)
                expected.push_back(window_reference("inclusive", x, n, scan_bound::ScanKind::inclusive));
            if (spec.param("exclusive") != 0)
                expected.push_back(window_reference("exclusive", x, n, scan_bound::ScanKind::exclusive));
        }
        REQUIRE_FALSE(expected.empty());

        const auto judge = [&](Round round) {
            const std::vector<float> inclusive = block_scan(x, round);
            std::vector<labkit::CompareReport> reports;
            for (const auto& e : expected) {
                std::vector<float> got = inclusive;
                if (e.name == "exclusive") {
                    got.insert(got.begin(), 0.0f);
                    got.pop_back();
                }
                reports.push_back(labkit::compare_within_tolerance(e, floats(e.name, got), p.output(e.name).tolerance));
            }
            return reports;
        };
        for (const auto& report : judge(as_float)) CHECK_MESSAGE(report.passed, report.message);
        const auto bf16 = judge(testkit::to_bf16);
        const auto fp16 = judge(testkit::to_fp16);
        // The case fails when any of its outputs does. (The exclusive scan of one element
        // is 0, which no precision gets wrong.)
        const auto case_passes = [](const std::vector<labkit::CompareReport>& reports) {
            return std::all_of(reports.begin(), reports.end(), [](const auto& r) { return r.passed; });
        };
        // The first output outside its bound, over the case's outputs.
        const auto first_failure = [](const std::vector<labkit::CompareReport>& reports) {
            std::uint64_t first = UINT64_MAX;
            for (const auto& r : reports)
                if (r.first) first = std::min(first, r.first->index);
            return first;
        };
        CHECK_FALSE(case_passes(fp16));
        if (spec.param("dist") == 1) {
            // bf16 passes, and its outputs' errors are no larger than float's own, taken
            // together: nothing in the outputs tells them apart.
            CHECK(case_passes(bf16));
            const auto& e = expected.front();
            const double float_rms = rms_of_bound(e, block_scan(x, as_float));
            const double bf16_rms = rms_of_bound(e, block_scan(x, testkit::to_bf16));
            CHECK(bf16_rms < 1.5 * float_rms);
            table += spec.name + ": root mean square of error / bound, float " + std::to_string(float_rms) +
                     ", bf16 " + std::to_string(bf16_rms) + "\n";
        }
        if (spec.param("dist") == 0) {
            CHECK_FALSE(case_passes(bf16));
            // At its first outputs, whatever the size.
            CHECK(first_failure(bf16) < 16);
            CHECK(first_failure(fp16) < 16);
        }
        table += spec.name + " (dist " + std::to_string(spec.param("dist")) + ")";
        for (std::size_t k = 0; k < expected.size(); ++k)
            table += "; " + expected[k].name + ": bf16 " + outcome(bf16[k]) + ", fp16 " + outcome(fp16[k]);
        table += "\n";
    }
    MESSAGE(table);
}
