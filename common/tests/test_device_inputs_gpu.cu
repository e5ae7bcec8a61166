// GPU tests of what the harness computes on the device and the checker recomputes on the
// CPU: inputs filled on the GPU equal generate_on_host bit for bit (numbers, and 8-bit
// images: noise, flat cells, a photograph tiled over any size), and the device hash
// of an array equals the host hash of its bytes.
#include <doctest/doctest.h>

#include <cstring>
#include <utility>
#include <vector>

#include "labkit/check.hpp"
#include "labkit/device.hpp"
#include "labkit/generate.hpp"
#include "labkit/inputs.hpp"

namespace {

void check_fill_matches_host(const labkit::InputSpec& spec, std::uint64_t seed) {
    labkit::DeviceArray array(spec.name, spec.dtype, spec.shape);
    labkit::fill_on_device(array, spec, seed);
    LABKIT_CHECK(cudaDeviceSynchronize());
    const auto device = array.download();
    const auto host = labkit::generate_on_host(spec, seed);
    REQUIRE(device.bytes.size() == host.bytes.size());
    CHECK(std::memcmp(device.bytes.data(), host.bytes.data(), host.bytes.size()) == 0);
}

}  // namespace

TEST_CASE("test_device_inputs_equal_the_host_inputs_bit_for_bit") {
    using labkit::DType;
    using labkit::Fill;
    for (std::uint64_t n : {1ull, 31ull, 1025ull, (1ull << 22) + 3}) {
        check_fill_matches_host({"x", DType::f32, {n}, Fill::uniform_float(0, -1.0f, 1.0f)}, 12345);
        check_fill_matches_host({"y", DType::f32, {n}, Fill::uniform_float(3, 0.0f, 1.0f).with_element(0, 16777216.0)},
                                99);
        check_fill_matches_host({"z", DType::i32, {n}, Fill::uniform_int(1, -4, 4)}, 7);
        check_fill_matches_host({"k", DType::u32, {n}, Fill::uniform_u32(4, 0, 0xFFFFFFFFu)}, 11);
        check_fill_matches_host({"d", DType::u32, {n}, Fill::uniform_u32(5, 0, 15).with_element(0, 4294967295.0)}, 11);
        check_fill_matches_host({"r", DType::u32, {n}, Fill::ramp_u32(0, 1)}, 11);
        check_fill_matches_host({"s", DType::u32, {n}, Fill::ramp_u32(static_cast<std::uint32_t>(3 * (n - 1) + 7), -3)}, 11);
    }
    // Ranges whose rounding reaches hi are pulled back below it on both sides alike.
    check_fill_matches_host({"w", DType::f32, {1 << 20}, Fill::uniform_float(2, 1.0f, 1.0000001f)}, 5);
}

TEST_CASE("test_device_images_equal_the_host_images_bit_for_bit") {
    using labkit::DType;
    using labkit::Fill;
    // A 31 x 17 picture (odd sizes, not a multiple of any block) to tile with.
    std::vector<unsigned char> photo(31 * 17);
    for (std::size_t i = 0; i < photo.size(); ++i) photo[i] = static_cast<unsigned char>((i * 37) % 251);
    // Shapes (height, width): one pixel, ragged, wider than one pass of the tiling kernel's
    // grid (64 blocks of 256 pixels), taller than its 65535 rows per pass.
    const std::pair<std::uint64_t, std::uint64_t> shapes[] = {{1, 1}, {3, 1000}, {517, 1023}, {2, 20000}, {70000, 3}};
    for (const auto& [height, width] : shapes) {
        INFO(height << " x " << width);
        check_fill_matches_host({"u", DType::u8, {height, width}, Fill::uniform_u8(0, 0, 255)}, 3);
        check_fill_matches_host({"c", DType::u8, {height, width}, Fill::cells_u8(0, width, 37, 6)}, 3);
        // Seeds 1 to 8 draw both orientations of the tiling (checked below).
        for (std::uint64_t seed = 1; seed <= 8; ++seed)
            check_fill_matches_host(
                {"t", DType::u8, {height, width}, Fill::tiles_u8(0, width, photo.data(), 31, 17, 3)}, seed);
    }
    bool turned[2] = {false, false};
    for (std::uint64_t seed = 1; seed <= 8; ++seed) turned[labkit::tile_placement(seed, 0, 31, 17).transposed] = true;
    CHECK((turned[0] && turned[1]));
    // A fixed element on top of a tiling, and a tiling without noise.
    check_fill_matches_host({"f", DType::u8, {40, 50}, Fill::tiles_u8(1, 50, photo.data(), 31, 17, 0).with_element(7, 255)},
                            4);
    check_fill_matches_host({"b", DType::u8, {17, 31}, Fill::bytes(photo.data())}, 4);
}
