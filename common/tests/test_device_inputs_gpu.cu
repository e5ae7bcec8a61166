// GPU tests of what the harness computes on the device and the checker recomputes on the
// CPU: inputs filled on the GPU equal generate_on_host bit for bit, and the device hash
// of an array equals the host hash of its bytes.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "labkit/check.hpp"
#include "labkit/device.hpp"
#include "labkit/inputs.hpp"
#include "labkit/output_hash.hpp"

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

TEST_CASE("test_device_hash_equals_the_host_hash") {
    const labkit::Hash128 key{0x1234, 0xabcdef};
    // Sizes around the word and chunk edges, and one large enough for three tree levels.
    for (std::uint64_t bytes : {0ull, 1ull, 7ull, 8ull, 9ull, 2048ull * 8, 2048ull * 8 + 4, (1ull << 20) + 12,
                                2048ull * 2048 * 8 + 40}) {
        labkit::DeviceArray array("out", labkit::DType::u8, {bytes});
        std::vector<std::uint8_t> host(bytes);
        for (std::uint64_t i = 0; i < bytes; ++i) host[i] = static_cast<std::uint8_t>(i * 131 + (i >> 9));
        if (bytes) LABKIT_CHECK(cudaMemcpy(array.data(), host.data(), bytes, cudaMemcpyHostToDevice));
        labkit::DeviceHasher hasher(bytes ? bytes : 1);
        const auto on_device = hasher.hash(array, key);
        const auto on_host = labkit::hash_bytes_on_host(host.data(), host.size(), key);
        CHECK_MESSAGE(on_device == on_host, "bytes = " << bytes);
    }
}
