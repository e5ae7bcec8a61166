// Lab scan's CPU reference: linked only into the trusted checker and the tests.
//
// The checker judges scans of up to 2^28 elements, so the reference is a blocked scan
// spread over the cores (labkit/parallel.hpp): the input is cut into parts; each part's
// total is summed on its own thread; the totals are carried from part to part in order;
// then every part scans its own elements on its own thread, starting from the carried sum
// of all the parts before it.
//
// Integer prefixes are exact, so they are the same whatever the split. The float prefixes
// are sums in double with Neumaier's compensation, like scan_bound::reference_scan_float
// (bound.hpp), but not bit for bit the same: there the sum runs through every element in
// order, here each part's sum starts from the carried one. They are as accurate. Neumaier's
// step keeps the rounding error of every addition exactly, in the compensation; all that is
// lost is the compensation's own rounding, of order u^2 S_i per addition (u = 2^-53, S_i =
// sum |x_j| over the output's elements), and the final rounding of sum + compensation to one
// double, at most u |y_i|. A part's total is carried as its sum and its compensation, two
// doubles each added with Neumaier's step, never rounded into one double first, so the only
// difference is the number of additions behind output i: i + 1 in order; here at most the
// elements up to i plus two per earlier part (2^16 elements or more each). The error is
// u |y_i| + O(n u^2) S_i either way (Higham, Accuracy and Stability of Numerical
// Algorithms, section 4.3), the second term of order 2^-74 S_i even for n = 2^32: far inside
// the 2^-50 S_i that scan_error_bound allows the reference. The same holds for S_i, and the
// largest |prefix| so far (M_i) is a maximum of the prefixes just computed, whatever the
// order it is taken in.
// A case of fewer than 2^17 elements is one part: the sequential sum, bit for bit. (On the
// bench case's inputs, 2^26 uniform floats, cut into 32 parts, no bit of any prefix or bound
// differs from the sequential scan's either.)
#include <algorithm>
#include <cmath>
#include <utility>

#include "bound.hpp"
#include "labkit/parallel.hpp"
#include "problem.hpp"

namespace lab_scan {

namespace {

// A part takes at least this many elements.
constexpr std::size_t kMinElementsPerPart = std::size_t(1) << 16;

// scan_bound::CompensatedSum's step with its two halves in the open, so that a part's total
// is carried to the next parts as both of them, not rounded to one double first.
struct OpenCompensatedSum {
    double sum = 0.0;
    double compensation = 0.0;

    void add(double x) {
        if (!std::isfinite(x) || !std::isfinite(sum)) {  // Inf/NaN: what IEEE gives, uncompensated
            sum += x;
            compensation = 0.0;
            return;
        }
        const double total = sum + x;
        compensation += std::fabs(sum) >= std::fabs(x) ? (sum - total) + x : (x - total) + sum;
        sum = total;
    }
    void add(const OpenCompensatedSum& other) {
        add(other.sum);
        add(other.compensation);
    }
    double value() const { return sum + compensation; }
};

struct PartStart {
    OpenCompensatedSum prefix;   // the sum of the elements before the part
    OpenCompensatedSum abs_sum;  // and of their magnitudes
    double abs_max = 0.0;        // the largest |prefix| before the part's first output
};

labkit::Expected float_reference(const std::string& name, std::span<const float> x, scan_bound::ScanKind kind) {
    const std::size_t n = x.size();
    labkit::Expected e{name, {n}, labkit::prefaulted_vector<double>(n), labkit::prefaulted_vector<double>(n),
                       labkit::prefaulted_vector<double>(n), scan_bound::kNearMissAdvice};
    const std::size_t parts = labkit::parallel_parts(n, kMinElementsPerPart);
    const auto begin_of = [&](std::size_t part) { return labkit::part_begin(n, parts, part); };

    // Each part's totals, carried in order into where every part starts.
    std::vector<PartStart> starts(parts);
    labkit::run_parts(parts, [&](std::size_t part) {
        for (std::size_t i = begin_of(part); i < begin_of(part + 1); ++i) {
            starts[part].prefix.add(x[i]);
            starts[part].abs_sum.add(std::fabs(x[i]));
        }
    });
    OpenCompensatedSum prefix, abs_sum;
    for (PartStart& start : starts) {
        const PartStart totals = start;
        start.prefix = prefix;
        start.abs_sum = abs_sum;
        prefix.add(totals.prefix);
        abs_sum.add(totals.abs_sum);
    }

    // The prefixes, and for now each output's sum of magnitudes in allowed_abs; each part's
    // largest |prefix|.
    std::vector<double> part_abs_max(parts, 0.0);
    labkit::run_parts(parts, [&](std::size_t part) {
        OpenCompensatedSum running = starts[part].prefix, magnitude = starts[part].abs_sum;
        double abs_max = 0.0;
        for (std::size_t i = begin_of(part); i < begin_of(part + 1); ++i) {
            if (kind == scan_bound::ScanKind::inclusive) {
                running.add(x[i]);
                magnitude.add(std::fabs(x[i]));
            }
            e.values[i] = running.value();
            e.allowed_abs[i] = magnitude.value();
            abs_max = std::max(abs_max, std::fabs(e.values[i]));
            if (kind == scan_bound::ScanKind::exclusive) {
                running.add(x[i]);
                magnitude.add(std::fabs(x[i]));
            }
        }
        part_abs_max[part] = abs_max;
    });
    for (std::size_t part = 1; part < parts; ++part)
        starts[part].abs_max = std::max(starts[part - 1].abs_max, part_abs_max[part - 1]);

    // The bounds, from each output's sum of magnitudes and the largest |prefix| up to it
    // (the empty prefix, 0, counts).
    labkit::run_parts(parts, [&](std::size_t part) {
        double abs_max = starts[part].abs_max;
        for (std::size_t i = begin_of(part); i < begin_of(part + 1); ++i) {
            abs_max = std::max(abs_max, std::fabs(e.values[i]));
            const double magnitude = e.allowed_abs[i];
            e.allowed_abs[i] = scan_bound::scan_error_bound(i, magnitude, abs_max, n);
            e.near_miss_abs[i] = scan_bound::long_chain_scan_bound(i, magnitude, abs_max, n);
        }
    });
    return e;
}

labkit::Expected int_reference(const std::string& name, std::span<const std::int32_t> x, scan_bound::ScanKind kind) {
    const std::size_t n = x.size();
    labkit::Expected e{name, {n}, labkit::prefaulted_vector<double>(n), {}};
    const std::size_t parts = labkit::parallel_parts(n, kMinElementsPerPart);
    const auto begin_of = [&](std::size_t part) { return labkit::part_begin(n, parts, part); };
    std::vector<std::int64_t> starts(parts, 0);
    labkit::run_parts(parts, [&](std::size_t part) {
        for (std::size_t i = begin_of(part); i < begin_of(part + 1); ++i) starts[part] += x[i];
    });
    std::int64_t carried = 0;
    for (std::int64_t& start : starts) start = std::exchange(carried, carried + start);
    labkit::run_parts(parts, [&](std::size_t part) {
        std::int64_t prefix = starts[part];
        for (std::size_t i = begin_of(part); i < begin_of(part + 1); ++i) {
            if (kind == scan_bound::ScanKind::inclusive) prefix += x[i];
            e.values[i] = static_cast<double>(prefix);
            if (kind == scan_bound::ScanKind::exclusive) prefix += x[i];
        }
    });
    return e;
}

}  // namespace

std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs) {
    std::vector<labkit::Expected> expected;
    const bool inclusive = spec.param("inclusive") != 0, exclusive = spec.param("exclusive") != 0;
    if (spec.param("integer") != 0) {
        const auto x = inputs.at(0).as<std::int32_t>();
        if (inclusive) expected.push_back(int_reference("inclusive_int", x, scan_bound::ScanKind::inclusive));
        if (exclusive) expected.push_back(int_reference("exclusive_int", x, scan_bound::ScanKind::exclusive));
    } else {
        const auto x = inputs.at(0).as<float>();
        if (inclusive) expected.push_back(float_reference("inclusive", x, scan_bound::ScanKind::inclusive));
        if (exclusive) expected.push_back(float_reference("exclusive", x, scan_bound::ScanKind::exclusive));
    }
    return expected;
}

}  // namespace lab_scan
