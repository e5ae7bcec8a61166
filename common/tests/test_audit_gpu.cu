// GPU tests of what the grader's auditor computes (labkit/audit.hpp) and of laying a case's
// arrays out in shared memory (labkit/shared_arena.hpp): the comparisons its verification
// rests on, with differences placed where a vectorised loop could miss them.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "labkit/audit.hpp"
#include "labkit/check.hpp"
#include "labkit/device.hpp"
#include "labkit/shared_arena.hpp"

namespace {

template <class T> std::unique_ptr<labkit::DeviceBuffer> upload(const std::vector<T>& values) {
    auto buffer = std::make_unique<labkit::DeviceBuffer>(values.size() * sizeof(T));
    LABKIT_CHECK(cudaMemcpy(buffer->data(), values.data(), buffer->bytes(), cudaMemcpyHostToDevice));
    return buffer;
}

}  // namespace

TEST_CASE("test_audit_counts_elements_that_differ_bit_for_bit_wherever_they_are") {
    (void)labkit::query_device();
    std::vector<std::uint32_t> a(1000003), b;
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<std::uint32_t>(i * 2654435761u);
    b = a;
    const auto da = upload(a);
    {
        const auto db = upload(b);
        const auto same = labkit::count_unequal(da->data(), db->data(), da->bytes(), 4);
        CHECK(same.count == 0);
    }
    b[7] ^= 1u;          // inside a 16-byte vector
    b[500000] ^= 0x80000000u;
    b[1000002] += 1;     // in the tail past the last whole vector
    const auto db = upload(b);
    const auto found = labkit::count_unequal(da->data(), db->data(), da->bytes(), 4);
    CHECK(found.count == 3);
    CHECK(found.first == 7);
    // Bytes, and arrays that do not start on a 16-byte boundary.
    std::vector<std::uint8_t> x(4099, 17), y = x;
    y[4098] = 18;
    y[1] = 0;
    const auto dx = upload(x), dy = upload(y);
    const auto bytes = labkit::count_unequal(dx->data(), dy->data(), dx->bytes(), 1);
    CHECK(bytes.count == 2);
    CHECK(bytes.first == 1);
    const auto shifted = labkit::count_unequal(static_cast<const std::uint8_t*>(dx->data()) + 1,
                                               static_cast<const std::uint8_t*>(dy->data()) + 1, 4098, 1);
    CHECK(shifted.count == 2);
    CHECK(shifted.first == 0);
    CHECK(labkit::count_unequal(dx->data(), dy->data(), 0, 1).count == 0);
}

TEST_CASE("test_audit_screens_float_outputs_for_unwritten_and_far_off_elements") {
    (void)labkit::query_device();
    const std::size_t n = 1 << 20;
    std::vector<float> reference(n), got(n);
    for (std::size_t i = 0; i < n; ++i) {
        reference[i] = std::sin(0.001f * static_cast<float>(i)) * 20.0f;
        got[i] = reference[i] * (1.0f + 1e-6f);  // float32 rounding of another order
    }
    const auto dr = upload(reference);
    {
        const auto dg = upload(got);
        const auto close = labkit::screen_floats(static_cast<const float*>(dg->data()),
                                                 static_cast<const float*>(dr->data()), n);
        CHECK(close.non_finite.count == 0);
        CHECK(close.relative() < 1e-5);
        CHECK(close.rms_reference == doctest::Approx(20.0 / std::sqrt(2.0)).epsilon(0.01));
    }
    // An output left poisoned here and there: NaN where the reference is a number.
    got[12345] = std::numeric_limits<float>::quiet_NaN();
    got[54321] = std::numeric_limits<float>::infinity();
    {
        const auto dg = upload(got);
        const auto poisoned = labkit::screen_floats(static_cast<const float*>(dg->data()),
                                                    static_cast<const float*>(dr->data()), n);
        CHECK(poisoned.non_finite.count == 2);
        CHECK(poisoned.non_finite.first == 12345);
    }
    // The previous sample's outputs (another sign pattern altogether) are far off.
    for (std::size_t i = 0; i < n; ++i) got[i] = std::cos(0.0017f * static_cast<float>(i)) * 20.0f;
    const auto dg = upload(got);
    const auto stale = labkit::screen_floats(static_cast<const float*>(dg->data()),
                                             static_cast<const float*>(dr->data()), n);
    CHECK(stale.non_finite.count == 0);
    CHECK(stale.relative() > 1.0);
    const auto at = labkit::first_beyond(static_cast<const float*>(dg->data()), static_cast<const float*>(dr->data()), n,
                                         labkit::kScreenRelativeRms * stale.rms_reference);
    CHECK(at < n);
    CHECK(std::fabs(got[at] - reference[at]) > labkit::kScreenRelativeRms * stale.rms_reference);
    for (std::size_t i = 0; i < at; ++i)
        REQUIRE(std::fabs(got[i] - reference[i]) <= labkit::kScreenRelativeRms * stale.rms_reference);
}

TEST_CASE("test_arena_placement_lays_arrays_out_in_order_and_counts_them") {
    (void)labkit::query_device();
    std::size_t counted = 0;
    {
        labkit::ArenaPlacement counting;
        labkit::DeviceArray a("a", labkit::DType::f32, {1000});
        labkit::DeviceArray b("b", labkit::DType::u8, {3});
        labkit::DeviceBuffer scratch(4096);  // not placed: a workspace stays the process's own
        counted = counting.used();
        CHECK(a.data() != nullptr);
    }
    CHECK(counted == 4096 + 512);  // 4000 bytes take 4096 (whole 512-byte steps), 3 bytes take 512
    labkit::SharedArena arena = labkit::SharedArena::create(counted);
    CHECK(arena.bytes() >= counted);
    {
        labkit::ArenaPlacement place(arena.base(), arena.bytes());
        labkit::DeviceArray a("a", labkit::DType::f32, {1000});
        labkit::DeviceArray b("b", labkit::DType::u8, {3});
        CHECK(a.data() == arena.base());
        CHECK(static_cast<char*>(b.data()) == static_cast<char*>(arena.base()) + 4096);
        CHECK(place.used() == counted);
        a.poison();  // the arena is ordinary device memory
        b.fill_bytes(7);
        LABKIT_CHECK(cudaDeviceSynchronize());
        const auto host = b.download();
        CHECK(static_cast<int>(host.bytes[2]) == 7);
        CHECK_THROWS_AS(labkit::DeviceArray("too_big", labkit::DType::f64, {1u << 28}), std::length_error);
    }
    const int fd = arena.export_fd();
    CHECK(fd >= 0);
    ::close(fd);
}
