// Tests of labkit/generate.hpp: values depend only on (seed, stream, index), lie in
// range, and parallel filling changes nothing; a photograph tiled over an image is the
// picture mirrored, turned and shifted as the seed says, with noise within its amplitude.
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

TEST_CASE("test_generate_mirrored_coordinates_repeat_with_every_other_copy_flipped") {
    std::vector<std::uint64_t> three, one;
    for (std::uint64_t c = 0; c < 12; ++c) three.push_back(labkit::mirrored(c, 3));
    for (std::uint64_t c = 0; c < 4; ++c) one.push_back(labkit::mirrored(c, 1));
    CHECK(three == std::vector<std::uint64_t>{0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0});
    CHECK(one == std::vector<std::uint64_t>{0, 0, 0, 0});
    // Past 2^32 the 64-bit path gives what the period says.
    const std::uint64_t far = (std::uint64_t(1) << 40) + 7;  // 2^40 = 0 (mod 2 * 512), so 7
    CHECK(labkit::mirrored(far, 512) == 7);
    CHECK(labkit::mirrored(far + 1024 - 8, 512) == 0);  // the last of a period: the flipped copy's 0
}

TEST_CASE("test_generate_tile_placement_is_drawn_from_the_seed_within_the_period") {
    bool seen[2] = {false, false};
    for (std::uint64_t seed = 0; seed < 64; ++seed) {
        const auto p = labkit::tile_placement(seed, 0, 451, 300);
        const auto q = labkit::tile_placement(seed, 0, 451, 300);
        CHECK((p.transposed == q.transposed && p.offset_x == q.offset_x && p.offset_y == q.offset_y));
        seen[p.transposed] = true;
        // Shifts within one period of the (turned) picture's mirrored tiling.
        CHECK(p.offset_x < 2 * (p.transposed ? 300u : 451u));
        CHECK(p.offset_y < 2 * (p.transposed ? 451u : 300u));
    }
    CHECK((seen[0] && seen[1]));
}

TEST_CASE("test_generate_tiled_u8_is_the_photograph_mirrored_turned_and_shifted") {
    // A 3 x 2 picture with distinct pixels: 10 20 30 / 40 50 60.
    const unsigned char photo[] = {10, 20, 30, 40, 50, 60};
    const auto at = [&](labkit::TilePlacement p, std::uint64_t x, std::uint64_t y) {
        return labkit::tiled_u8_at(1, 0, photo, 3, 2, p, x, y, 100, 0);
    };
    // As it is: rows 10 20 30 30 20 10 10 ..., then the row below, then mirrored upwards.
    const labkit::TilePlacement plain{false, 0, 0};
    CHECK(at(plain, 0, 0) == 10);
    CHECK(at(plain, 2, 0) == 30);
    CHECK(at(plain, 3, 0) == 30);
    CHECK(at(plain, 5, 0) == 10);
    CHECK(at(plain, 6, 0) == 10);
    CHECK(at(plain, 1, 1) == 50);
    CHECK(at(plain, 1, 2) == 50);  // the copy below is flipped: its first row is the picture's last
    CHECK(at(plain, 1, 3) == 20);
    CHECK(at(plain, 1, 4) == 20);
    // Shifted: pixel (x, y) is the plain tiling's (x + offset_x, y + offset_y).
    const labkit::TilePlacement shifted{false, 4, 1};
    for (std::uint64_t y = 0; y < 5; ++y)
        for (std::uint64_t x = 0; x < 7; ++x) CHECK(at(shifted, x, y) == at(plain, x + 4, y + 1));
    // Turned: the transposed picture (2 wide, 3 tall) is tiled: pixel (x, y) is photo (y, x).
    const labkit::TilePlacement turned{true, 0, 0};
    for (std::uint64_t y = 0; y < 3; ++y)
        for (std::uint64_t x = 0; x < 2; ++x) CHECK(at(turned, x, y) == photo[x * 3 + y]);
    CHECK(at(turned, 2, 0) == at(turned, 1, 0));  // mirrored along the turned picture's width of 2
}

TEST_CASE("test_generate_tiled_u8_noise_stays_within_its_amplitude_and_is_clamped") {
    const unsigned char photo[] = {0, 128, 255, 7};
    const labkit::TilePlacement plain{false, 0, 0};
    int seen_low = 0, seen_high = 0;
    for (std::uint64_t y = 0; y < 200; ++y)
        for (std::uint64_t x = 0; x < 200; ++x) {
            const int base = photo[(labkit::mirrored(y, 2) * 2) + labkit::mirrored(x, 2)];
            const int v = labkit::tiled_u8_at(9, 0, photo, 2, 2, plain, x, y, 200, 3);
            CHECK(v >= std::max(0, base - 3));
            CHECK(v <= std::min(255, base + 3));
            seen_low += v == base - 3;
            seen_high += v == base + 3;
        }
    CHECK(seen_low > 0);  // both ends of [-3, 3] are reached
    CHECK(seen_high > 0);
}

TEST_CASE("test_generate_tiles_u8_fills_through_its_input_description") {
    using labkit::DType;
    using labkit::Fill;
    std::vector<unsigned char> photo(31 * 17);
    for (std::size_t i = 0; i < photo.size(); ++i) photo[i] = static_cast<unsigned char>((i * 37) % 251);
    const std::uint64_t width = 1000, height = 700;  // 700,000 pixels: several threads' parts where cores allow
    const labkit::InputSpec spec{"in", DType::u8, {height, width}, Fill::tiles_u8(0, width, photo.data(), 31, 17, 3)};
    const auto a = labkit::generate_on_host(spec, 5);
    const auto placement = labkit::tile_placement(5, 0, 31, 17);
    bool same = true;
    for (std::uint64_t y = 0; y < height; ++y)
        for (std::uint64_t x = 0; x < width; ++x)
            same = same && a.as<std::uint8_t>()[y * width + x] ==
                               labkit::tiled_u8_at(5, 0, photo.data(), 31, 17, placement, x, y, width, 3);
    CHECK(same);
    CHECK(labkit::generate_on_host(spec, 5).bytes == a.bytes);
    CHECK(labkit::generate_on_host(spec, 6).bytes != a.bytes);
    // Large enough for the parallel fill: each part starts at the right pixel of its row.
    const std::uint64_t big_width = 1031, big_height = 4099;
    const labkit::InputSpec big{"in", DType::u8, {big_height, big_width},
                                Fill::tiles_u8(2, big_width, photo.data(), 31, 17, 3)};
    const auto b = labkit::generate_on_host(big, 11);
    const auto big_placement = labkit::tile_placement(11, 2, 31, 17);
    for (std::uint64_t i : {std::uint64_t(0), big_width - 1, big_width, big_width * big_height / 3 + 5,
                            big_width * big_height - 1})
        CHECK(b.as<std::uint8_t>()[i] == labkit::tiled_u8_at(11, 2, photo.data(), 31, 17, big_placement, i % big_width,
                                                             i / big_width, big_width, 3));
    // A width other than shape[1], no photograph, an empty one, a dtype other than u8.
    CHECK_THROWS(labkit::generate_on_host({"in", DType::u8, {4, 5}, Fill::tiles_u8(0, 4, photo.data(), 31, 17, 3)}, 1));
    CHECK_THROWS(labkit::generate_on_host({"in", DType::u8, {4, 5}, Fill::tiles_u8(0, 5, nullptr, 31, 17, 3)}, 1));
    CHECK_THROWS(labkit::generate_on_host({"in", DType::u8, {4, 5}, Fill::tiles_u8(0, 5, photo.data(), 0, 17, 3)}, 1));
    CHECK_THROWS(labkit::generate_on_host({"in", DType::u8, {4, 5}, Fill::tiles_u8(0, 5, photo.data(), 31, 17, 256)}, 1));
    CHECK_THROWS(labkit::generate_on_host({"in", DType::u32, {4, 5}, Fill::tiles_u8(0, 5, photo.data(), 31, 17, 3)}, 1));
}
