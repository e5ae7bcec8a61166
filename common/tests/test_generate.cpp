// Tests of labkit/generate.hpp: values depend only on (seed, stream, index), lie in
// range, and parallel filling changes nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "labkit/generate.hpp"
#include "labkit/inputs.hpp"

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

TEST_CASE("test_generate_uniform_u32_covers_its_inclusive_range") {
    std::vector<std::uint32_t> a(100000), b(100000);
    labkit::fill_uniform_u32(a, 3, 0, 0, 15);
    labkit::fill_uniform_u32(b, 3, 0, 0, 15);
    CHECK(a == b);
    CHECK(*std::min_element(a.begin(), a.end()) == 0u);
    CHECK(*std::max_element(a.begin(), a.end()) == 15u);
    // The full range: hi = 2^32 - 1 is a span of 2^32, so the top bit is set about half the time.
    labkit::fill_uniform_u32(a, 3, 1, 0, 0xFFFFFFFFu);
    const auto high = std::count_if(a.begin(), a.end(), [](std::uint32_t v) { return v >= 0x80000000u; });
    CHECK(high > 45000);
    CHECK(high < 55000);
    for (std::size_t i : {std::size_t(0), std::size_t(777)})
        CHECK(a[i] == static_cast<std::uint32_t>(labkit::random_bits(3, 1, i) % (std::uint64_t(1) << 32)));
    // All equal: lo = hi.
    labkit::fill_uniform_u32(a, 3, 2, 42, 42);
    CHECK(std::all_of(a.begin(), a.end(), [](std::uint32_t v) { return v == 42u; }));
    CHECK_THROWS(labkit::fill_uniform_u32(a, 1, 0, 2, 1));
}

TEST_CASE("test_generate_ramp_u32_ascends_descends_and_wraps") {
    std::vector<std::uint32_t> r(5);
    labkit::fill_ramp_u32(r, 0, 1);
    CHECK(r == std::vector<std::uint32_t>{0, 1, 2, 3, 4});
    labkit::fill_ramp_u32(r, 19, -3);
    CHECK(r == std::vector<std::uint32_t>{19, 16, 13, 10, 7});
    labkit::fill_ramp_u32(r, 0xFFFFFFFEu, 1);
    CHECK(r == std::vector<std::uint32_t>{0xFFFFFFFEu, 0xFFFFFFFFu, 0, 1, 2});
    const std::size_t n = (std::size_t(1) << 22) + 3;  // large enough to use threads
    std::vector<std::uint32_t> big(n);
    labkit::fill_ramp_u32(big, 7, 3);
    CHECK(big[n - 1] == static_cast<std::uint32_t>(7 + 3 * (n - 1)));
    CHECK(std::is_sorted(big.begin(), big.end()));
}

TEST_CASE("test_generate_u32_fills_through_their_input_descriptions") {
    using labkit::DType;
    using labkit::Fill;
    const auto keys = labkit::generate_on_host({"k", DType::u32, {6}, Fill::uniform_u32(0, 5, 5).with_element(2, 4294967295.0)}, 1);
    CHECK(std::vector<std::uint32_t>(keys.as<std::uint32_t>().begin(), keys.as<std::uint32_t>().end()) ==
          std::vector<std::uint32_t>{5, 5, 4294967295u, 5, 5, 5});
    const auto ramp = labkit::generate_on_host({"v", DType::u32, {4}, Fill::ramp_u32(0, 1)}, 1);
    CHECK(ramp.as<std::uint32_t>()[3] == 3u);
    // A u32 fill of another dtype, a range outside u32, lo > hi, a fixed value outside u32.
    CHECK_THROWS(labkit::generate_on_host({"k", DType::i32, {4}, Fill::uniform_u32(0, 0, 1)}, 1));
    CHECK_THROWS(labkit::generate_on_host({"k", DType::i32, {4}, Fill::ramp_u32(0, 1)}, 1));
    CHECK_THROWS(labkit::generate_on_host({"k", DType::u32, {4}, Fill::uniform_u32(0, 3, 2)}, 1));
    CHECK_THROWS(labkit::generate_on_host({"k", DType::u32, {4}, Fill::uniform_u32(0, 0, 1).with_element(0, -1.0)}, 1));
    CHECK_THROWS(labkit::generate_on_host({"k", DType::u32, {4}, Fill::uniform_u32(0, 0, 1).with_element(0, 0.5)}, 1));
}
