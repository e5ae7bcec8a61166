#include "labkit/stats.hpp"

#include <algorithm>
#include <stdexcept>

namespace labkit {

double quantile(std::span<const double> values, double q) {
    if (values.empty()) throw std::invalid_argument("quantile of no values");
    if (q < 0.0 || q > 1.0) throw std::invalid_argument("quantile needs q in [0, 1]");
    std::vector<double> sorted(values.begin(), values.end());
    std::sort(sorted.begin(), sorted.end());
    const double pos = q * static_cast<double>(sorted.size() - 1);
    const auto lo = static_cast<std::size_t>(pos);
    const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

SampleSummary summarise(std::span<const double> samples) {
    if (samples.empty()) throw std::invalid_argument("no timing samples to summarise");
    SampleSummary s;
    s.median = quantile(samples, 0.5);
    s.q1 = quantile(samples, 0.25);
    s.q3 = quantile(samples, 0.75);
    const auto [lo, hi] = std::minmax_element(samples.begin(), samples.end());
    s.min = *lo;
    s.max = *hi;
    s.spread = (samples.size() > 1 && s.median > 0) ? (s.q3 - s.q1) / s.median : 0.0;
    return s;
}

}  // namespace labkit
