#include "labkit/compare.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <type_traits>

#include "labkit/parallel.hpp"

namespace labkit {
namespace {

template <class F, class U> std::uint64_t ulp_distance_impl(F a, F b) {
    // Map the bits onto an unsigned line where adjacent floats are adjacent integers:
    // negatives below the midpoint, positives above, -0 and +0 both on it.
    U ua, ub;
    std::memcpy(&ua, &a, sizeof(F));
    std::memcpy(&ub, &b, sizeof(F));
    constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
    auto key = [](U bits) { return (bits & sign) ? sign - (bits & ~sign) : sign + bits; };
    const U ka = key(ua), kb = key(ub);
    return static_cast<std::uint64_t>(ka > kb ? ka - kb : kb - ka);
}

template <class T> double element_as_double(const HostArray& a, std::uint64_t i) {
    return static_cast<double>(a.as<T>()[static_cast<std::size_t>(i)]);
}

}  // namespace

double element_value(const HostArray& a, std::uint64_t i) {
    switch (a.dtype) {
        case DType::f32: return element_as_double<float>(a, i);
        case DType::f64: return element_as_double<double>(a, i);
        case DType::i32: return element_as_double<std::int32_t>(a, i);
        case DType::u32: return element_as_double<std::uint32_t>(a, i);
        case DType::i64: return element_as_double<std::int64_t>(a, i);
        case DType::u64: return element_as_double<std::uint64_t>(a, i);
        case DType::u8: return element_as_double<std::uint8_t>(a, i);
    }
    return 0.0;
}

namespace {

std::string shape_text(const std::vector<std::uint64_t>& shape) {
    std::ostringstream s;
    s << '[';
    for (std::size_t i = 0; i < shape.size(); ++i) s << (i ? " x " : "") << shape[i];
    s << ']';
    return s.str();
}

}  // namespace

std::uint64_t ulp_distance(float a, float b) { return ulp_distance_impl<float, std::uint32_t>(a, b); }
std::uint64_t ulp_distance(double a, double b) { return ulp_distance_impl<double, std::uint64_t>(a, b); }

std::string format_value(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    std::ostringstream s;
    s.precision(9);
    s << value;
    return s.str();
}

namespace {

// |off| / |expected| in three significant digits' worth; |off| itself when expected is 0.
double relative(double off, double expected) {
    return expected != 0.0 ? off / std::fabs(expected) : off;
}

}  // namespace

std::string near_miss_advice_at(const Expected& expected, std::uint64_t i) {
    std::string advice = expected.near_miss_advice;
    const auto hole = advice.find("{near}");
    if (hole != std::string::npos && i < expected.near_miss_abs.size())
        advice.replace(hole, 6, format_value(expected.near_miss_abs[static_cast<std::size_t>(i)]));
    return advice;
}

std::string describe_index(const std::string& name, const std::vector<std::uint64_t>& shape,
                           std::uint64_t flat_index) {
    std::ostringstream s;
    s << name << '[';
    if (shape.size() <= 1) {
        s << flat_index;
    } else {
        std::vector<std::uint64_t> coords(shape.size());
        std::uint64_t rest = flat_index;
        for (std::size_t d = shape.size(); d-- > 0;) {
            coords[d] = shape[d] ? rest % shape[d] : 0;
            rest = shape[d] ? rest / shape[d] : 0;
        }
        if (shape.size() == 2) {
            s << "y=" << coords[0] << ", x=" << coords[1];
        } else {
            for (std::size_t d = 0; d < coords.size(); ++d) s << (d ? ", " : "") << coords[d];
        }
    }
    s << ']';
    return s.str();
}

namespace {

// A part of the comparison takes at least this many elements.
constexpr std::size_t kMinElementsPerPart = std::size_t(1) << 18;

struct ComparedInputs {
    const Expected& expected;
    const HostArray& got;
    const Tolerance& tolerance;
    bool sampled;
    bool per_element;
    std::uint64_t n;  // the elements the output has
};

// What one part of the positions in the reference's lists found, in its own order.
struct PartFindings {
    std::uint64_t checked = 0;
    std::uint64_t mismatches = 0;
    std::optional<Mismatch> first;
    std::uint64_t first_position = 0;
    std::optional<Mismatch> worst;  // the first of the largest (ratio, diff) in the part
    double worst_ratio = -1.0;
    double worst_diff = -1.0;
    std::optional<std::uint64_t> out_of_range;  // a sampled index outside the output: the reference's bug
};

// Positions [begin, end) of the reference's lists against `values`, the output's elements.
template <class T>
void compare_positions(const ComparedInputs& in, const T* values, std::uint64_t begin, std::uint64_t end,
                       PartFindings& found) {
    const Expected& expected = in.expected;
    const Tolerance& tolerance = in.tolerance;
    for (std::uint64_t position = begin; position < end; ++position) {
        const std::uint64_t i = in.sampled ? expected.only[static_cast<std::size_t>(position)] : position;
        if (i >= in.n) {
            found.out_of_range = i;
            return;
        }
        const double e = expected.values[static_cast<std::size_t>(position)];
        const double g = static_cast<double>(values[static_cast<std::size_t>(i)]);
        double allowed = in.per_element ? expected.allowed_abs[static_cast<std::size_t>(position)]
                                        : tolerance.abs + tolerance.rel * std::fabs(e);
        bool ok;
        double ratio;  // error over allowance: how bad this element is
        double diff = std::numeric_limits<double>::infinity();
        if (std::isnan(e) || std::isnan(g)) {
            ok = std::isnan(e) && std::isnan(g);
            ratio = ok ? 0.0 : std::numeric_limits<double>::infinity();
        } else if (std::isinf(e) || std::isinf(g)) {
            ok = e == g;
            ratio = ok ? 0.0 : std::numeric_limits<double>::infinity();
        } else {
            diff = std::fabs(g - e);
            ok = diff <= allowed;
            if (!ok && tolerance.ulp >= 0 && !in.per_element) {
                const std::uint64_t ulps = in.got.dtype == DType::f32
                                               ? ulp_distance(static_cast<float>(g), static_cast<float>(e))
                                               : ulp_distance(g, e);
                ok = ulps <= static_cast<std::uint64_t>(tolerance.ulp);
            }
            ratio = allowed > 0 ? diff / allowed : (diff > 0 ? std::numeric_limits<double>::infinity() : 0.0);
        }
        ++found.checked;
        if (ok) continue;
        ++found.mismatches;
        const Mismatch m{i, e, g, allowed};
        if (!found.first) {
            found.first = m;
            found.first_position = position;
        }
        if (ratio > found.worst_ratio || (ratio == found.worst_ratio && diff > found.worst_diff)) {
            found.worst_ratio = ratio;
            found.worst_diff = diff;
            found.worst = m;
        }
    }
}

void compare_part(const ComparedInputs& in, std::uint64_t begin, std::uint64_t end, PartFindings& found) {
    const HostArray& got = in.got;
    switch (got.dtype) {
        case DType::f32: return compare_positions(in, got.as<float>().data(), begin, end, found);
        case DType::f64: return compare_positions(in, got.as<double>().data(), begin, end, found);
        case DType::i32: return compare_positions(in, got.as<std::int32_t>().data(), begin, end, found);
        case DType::u32: return compare_positions(in, got.as<std::uint32_t>().data(), begin, end, found);
        case DType::i64: return compare_positions(in, got.as<std::int64_t>().data(), begin, end, found);
        case DType::u64: return compare_positions(in, got.as<std::uint64_t>().data(), begin, end, found);
        case DType::u8: return compare_positions(in, got.as<std::uint8_t>().data(), begin, end, found);
    }
    throw std::logic_error("output '" + got.name + "' has an element type the comparison does not know");
}

// The root mean square, over the compared positions, of |got - expected| / allowed_abs
// (Expected::rms_limit); nothing when no position has a finite error. One pass in order
// on the calling thread, so the sum is the same however the comparison was split.
template <class T>
std::optional<double> rms_error_of_bound(const ComparedInputs& in, const T* values) {
    const Expected& expected = in.expected;
    double sum_of_squares = 0.0;
    std::uint64_t counted = 0;
    for (std::size_t position = 0; position < expected.values.size(); ++position) {
        const std::uint64_t i = in.sampled ? expected.only[position] : position;
        const double e = expected.values[position];
        const double g = static_cast<double>(values[static_cast<std::size_t>(i)]);
        if (!std::isfinite(e) || !std::isfinite(g)) continue;  // judged element by element
        const double diff = std::fabs(g - e), allowed = expected.allowed_abs[position];
        const double ratio = allowed > 0 ? diff / allowed : (diff > 0 ? std::numeric_limits<double>::infinity() : 0.0);
        sum_of_squares += ratio * ratio;
        ++counted;
    }
    if (counted == 0) return std::nullopt;
    return std::sqrt(sum_of_squares / static_cast<double>(counted));
}

std::optional<double> rms_error_of_bound(const ComparedInputs& in) {
    const HostArray& got = in.got;
    switch (got.dtype) {
        case DType::f32: return rms_error_of_bound(in, got.as<float>().data());
        case DType::f64: return rms_error_of_bound(in, got.as<double>().data());
        case DType::i32: return rms_error_of_bound(in, got.as<std::int32_t>().data());
        case DType::u32: return rms_error_of_bound(in, got.as<std::uint32_t>().data());
        case DType::i64: return rms_error_of_bound(in, got.as<std::int64_t>().data());
        case DType::u64: return rms_error_of_bound(in, got.as<std::uint64_t>().data());
        case DType::u8: return rms_error_of_bound(in, got.as<std::uint8_t>().data());
    }
    throw std::logic_error("output '" + got.name + "' has an element type the comparison does not know");
}

}  // namespace

CompareReport compare_within_tolerance(const Expected& expected, const HostArray& got,
                                       const Tolerance& tolerance) {
    CompareReport report;
    report.output = expected.name;
    const bool sampled = !expected.only.empty();
    const std::uint64_t count = expected.values.size();  // the elements the reference gives
    std::uint64_t n = count;                              // the elements the output must have
    if (sampled) {
        if (expected.only.size() != count)
            throw std::logic_error("reference for '" + expected.name + "' gives " + std::to_string(count) +
                                   " values for " + std::to_string(expected.only.size()) + " sampled elements");
        n = 1;
        for (const std::uint64_t extent : expected.shape) n *= extent;
    }
    if (got.size() != n || got.bytes.size() != got.size() * dtype_size(got.dtype)) {
        report.passed = false;
        report.mismatches = n;
        report.message = expected.name + " has the wrong size: expected " + std::to_string(n) +
                         " elements " + shape_text(expected.shape) + ", got " + std::to_string(got.size()) +
                         " " + shape_text(got.shape);
        return report;
    }
    const bool per_element = !expected.allowed_abs.empty();
    if (per_element && expected.allowed_abs.size() != count)
        throw std::logic_error("reference for '" + expected.name + "' gives " +
                               std::to_string(expected.allowed_abs.size()) + " bounds for " +
                               std::to_string(count) + " values");

    // The elements are judged in parts on several threads, each part in order; the parts'
    // findings are then joined in order, so the report is the one a single pass gives.
    const ComparedInputs in{expected, got, tolerance, sampled, per_element, n};
    const std::size_t parts = parallel_parts(static_cast<std::size_t>(count), kMinElementsPerPart);
    std::vector<PartFindings> found(parts);
    run_parts(parts, [&](std::size_t part) {
        const std::uint64_t begin = part_begin(count, parts, part), end = part_begin(count, parts, part + 1);
        compare_part(in, begin, end, found[part]);
    });
    for (const PartFindings& f : found)
        if (f.out_of_range)
            throw std::logic_error("reference for '" + expected.name + "' samples element " +
                                   std::to_string(*f.out_of_range) + " of " + std::to_string(n));
    double worst_ratio = -1.0, worst_diff = -1.0;
    std::uint64_t first_position = 0;  // where the first mismatch is in the reference's lists
    for (const PartFindings& f : found) {
        report.checked += f.checked;
        report.mismatches += f.mismatches;
        if (!report.first && f.first) {
            report.first = f.first;
            first_position = f.first_position;
        }
        if (f.worst && (f.worst_ratio > worst_ratio || (f.worst_ratio == worst_ratio && f.worst_diff > worst_diff))) {
            worst_ratio = f.worst_ratio;
            worst_diff = f.worst_diff;
            report.worst = f.worst;
        }
    }
    report.passed = report.mismatches == 0;
    if (expected.rms_limit > 0) {
        if (!per_element)
            throw std::logic_error("reference for '" + expected.name +
                                   "' sets a limit on its errors' root mean square but no bound per element");
        report.rms_limit = expected.rms_limit;
        report.rms_error = rms_error_of_bound(in);
        report.rms_failed = report.passed && report.rms_error && *report.rms_error > expected.rms_limit;
        if (report.rms_failed) report.passed = false;
    }

    std::ostringstream msg;
    const std::string checked_text = sampled ? std::to_string(count) + " sampled elements (of " +
                                                   std::to_string(n) + ")"
                                             : std::to_string(n) + " elements";
    if (report.passed) {
        msg << "all " << checked_text << " of " << expected.name << " match";
    } else if (report.rms_failed) {
        if (count == 1)
            msg << describe_index(expected.name, expected.shape, sampled ? expected.only[0] : 0);
        else
            msg << "each of the " << checked_text << " of " << expected.name;
        msg << " is within its own bound, but ";
        if (expected.rms_explain)
            msg << expected.rms_explain(*report.rms_error, expected.rms_limit);
        else
            msg << (count == 1 ? "its error is " : "the root mean square of their errors is ")
                << format_value(*report.rms_error) << " of the allowed difference, more than the "
                << format_value(expected.rms_limit) << " a correct answer stays within";
    } else {
        const Mismatch& f = *report.first;
        const double off = std::fabs(f.got - f.expected);
        const double near = expected.near_miss_abs.size() == count
                                ? expected.near_miss_abs[static_cast<std::size_t>(first_position)] : 0.0;
        report.near_miss = std::isfinite(off) && off > f.allowed && off <= near;
        msg << describe_index(expected.name, expected.shape, f.index) << " is wrong: expected "
            << format_value(f.expected) << ", got " << format_value(f.got);
        if (std::isnan(f.got) && !std::isnan(f.expected)) {
            msg << " (NaN here usually means the element was never written)";
        } else if (report.near_miss) {
            const std::string advice = near_miss_advice_at(expected, first_position);
            msg << ": off by " << format_value(off) << " (relative " << format_value(relative(off, f.expected))
                << "); a tree of additions stays within " << format_value(f.allowed) << " here, but " << advice;
        } else {
            msg << " (allowed difference " << format_value(f.allowed) << ")";
        }
        if (expected.explain) msg << ": " << expected.explain(got, f.index);
        msg << "; " << report.mismatches << " of " << checked_text << " differ";
        if (report.worst && report.worst->index != f.index)
            msg << ", the worst at " << describe_index(expected.name, expected.shape, report.worst->index)
                << " (expected " << format_value(report.worst->expected) << ", got "
                << format_value(report.worst->got) << ")";
    }
    report.message = msg.str();
    return report;
}

}  // namespace labkit
