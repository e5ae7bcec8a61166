// Tests of labkit/generate.hpp: values depend only on (seed, stream, index), lie in
// range, and parallel filling changes nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "labkit/generate.hpp"

TEST_CASE("test_generate_is_a_pure_function_of_seed_stream_index") {
    std::vector<float> a(1000), b(1000), c(1000), d(1000);
    labkit::fill_uniform(a, 7, 0, -1.0f, 1.0f);
    labkit::fill_uniform(b, 7, 0, -1.0f, 1.0f);
    labkit::fill_uniform(c, 8, 0, -1.0f, 1.0f);
    labkit::fill_uniform(d, 7, 1, -1.0f, 1.0f);
    CHECK(a == b);
    CHECK(a != c);
    CHECK(a != d);
    std::vector<float> prefix(10);
    labkit::fill_uniform(prefix, 7, 0, -1.0f, 1.0f);
    CHECK(std::equal(prefix.begin(), prefix.end(), a.begin()));
}

TEST_CASE("test_generate_parallel_fill_matches_serial_values") {
    const std::size_t n = (std::size_t(1) << 22) + 3;  // large enough to use threads
    std::vector<float> big(n);
    labkit::fill_uniform(big, 99, 2, 0.0f, 1.0f);
    for (std::size_t i : {std::size_t(0), n / 3, n - 1}) {
        const double u = labkit::random_unit(99, 2, i);
        CHECK(big[i] == static_cast<float>(0.0 + 1.0 * u));
    }
}

TEST_CASE("test_generate_values_stay_in_range") {
    std::vector<float> f(100000);
    labkit::fill_uniform(f, 3, 0, -1.0f, 1.0f);
    CHECK(*std::min_element(f.begin(), f.end()) >= -1.0f);
    CHECK(*std::max_element(f.begin(), f.end()) < 1.0f);
    std::vector<std::int32_t> i(100000);
    labkit::fill_uniform_int(i, 3, 0, -4, 4);
    CHECK(*std::min_element(i.begin(), i.end()) == -4);
    CHECK(*std::max_element(i.begin(), i.end()) == 4);
    CHECK_THROWS(labkit::fill_uniform(f, 1, 0, 1.0f, 1.0f));
    CHECK_THROWS(labkit::fill_uniform_int(i, 1, 0, 2, 1));
}
