// GPU tests of labkit's device pieces: device queries, the SM clock probe, the timing
// protocol (warm-ups, samples, prepare before each sample) and poisoning.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "labkit/check.hpp"
#include "labkit/device.hpp"
#include "labkit/timing.hpp"

namespace {
__global__ void spin(unsigned long long cycles) {
    const long long start = clock64();
    while (static_cast<unsigned long long>(clock64() - start) < cycles) {
    }
}
}  // namespace

TEST_CASE("test_device_query_and_clock") {
    const auto info = labkit::query_device();
    CHECK(info.sm_count > 0);
    CHECK(info.l2_bytes > 0);
    const double mhz = labkit::measure_sm_clock_mhz();
    CHECK(mhz > 100.0);
    CHECK(mhz < 5000.0);
}

TEST_CASE("test_timer_runs_prepare_before_every_sample_and_times_the_region") {
    const auto info = labkit::query_device();
    labkit::Timer timer(info);
    int prepared = 0, ran = 0;
    std::vector<int> finished;
    std::vector<int> prepared_for;
    const auto t = timer.measure([&](int sample) { ++prepared; prepared_for.push_back(sample); },
                                 [&] {
                                     ++ran;
                                     spin<<<1, 1>>>(1'000'000ull);
                                 },
                                 labkit::TimingOptions{2, 7}, [&](int sample) { finished.push_back(sample); });
    CHECK(prepared == 9);
    // Warm-ups first (numbered after the timed samples, so every run can have inputs of
    // its own), then the timed samples in order.
    CHECK(prepared_for == std::vector<int>{7, 8, 0, 1, 2, 3, 4, 5, 6});
    CHECK(ran == 9);
    CHECK(finished == std::vector<int>{0, 1, 2, 3, 4, 5, 6});  // only timed samples, in order
    REQUIRE(t.samples_ms.size() == 7);
    CHECK(t.summary.median > 0.05);  // a million cycles is at least ~0.2 ms below 5 GHz
    CHECK(t.l2_flushed);
    CHECK(t.summary.spread < 0.5);
}

TEST_CASE("test_device_array_poison_reads_back_as_nan") {
    labkit::DeviceArray a("x", labkit::DType::f32, {1000});
    a.poison();
    const auto host = a.download();
    for (float v : host.as<float>()) CHECK(std::isnan(v));
}

TEST_CASE("test_check_macro_reports_the_call") {
    void* p = nullptr;
    try {
        LABKIT_CHECK(cudaMalloc(&p, ~std::size_t(0)));
        FAIL("an impossible allocation did not fail");
    } catch (const labkit::CudaError& e) {
        CHECK(std::string(e.what()).find("cudaMalloc(&p, ~std::size_t(0))") != std::string::npos);
    }
}
