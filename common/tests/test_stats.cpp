// Tests of labkit/stats.hpp: median, quantiles and the spread of timing samples.
#include <doctest/doctest.h>

#include <vector>

#include "labkit/stats.hpp"

TEST_CASE("test_stats_median_of_odd_and_even_counts") {
    const std::vector<double> odd{5, 1, 3};
    const std::vector<double> even{4, 1, 3, 2};
    CHECK(labkit::summarise(odd).median == 3.0);
    CHECK(labkit::summarise(even).median == 2.5);
}

TEST_CASE("test_stats_spread_is_iqr_over_median_and_ignores_one_outlier") {
    std::vector<double> samples(20, 1.0);
    samples[3] = 50.0;  // one stray slow sample
    const auto s = labkit::summarise(samples);
    CHECK(s.median == 1.0);
    CHECK(s.spread == 0.0);
    CHECK(s.max == 50.0);
    const std::vector<double> ramp{1, 2, 3, 4, 5};
    CHECK(labkit::summarise(ramp).spread == doctest::Approx((4.0 - 2.0) / 3.0));
}

TEST_CASE("test_stats_single_sample_and_empty") {
    const std::vector<double> one{2.0};
    CHECK(labkit::summarise(one).spread == 0.0);
    CHECK_THROWS(labkit::summarise(std::vector<double>{}));
    CHECK_THROWS(labkit::quantile(one, 1.5));
}
