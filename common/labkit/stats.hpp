// Summaries of timing samples: median, quantiles and spread. Kept apart from the CUDA
// timing code so it is tested on machines without a GPU.
#pragma once

#include <span>
#include <vector>

namespace labkit {

struct SampleSummary {
    double median = 0.0;
    double min = 0.0;
    double max = 0.0;
    double q1 = 0.0;  // 25th percentile
    double q3 = 0.0;  // 75th percentile
    // The interquartile range over the median: robust to a stray slow sample, and
    // comparable across sizes. 0 for fewer than two samples.
    double spread = 0.0;
};

// Linear-interpolated quantile q in [0, 1] of the values (which need not be sorted).
double quantile(std::span<const double> values, double q);

// Throws std::invalid_argument on an empty span.
SampleSummary summarise(std::span<const double> samples);

}  // namespace labkit
