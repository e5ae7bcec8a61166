#include "labkit/timing.hpp"

#include "labkit/check.hpp"

namespace labkit {

Timer::Timer(const DeviceInfo& device) : l2_scratch_(2 * device.l2_bytes) {
    LABKIT_CHECK(cudaEventCreate(&start_));
    LABKIT_CHECK(cudaEventCreate(&stop_));
}

Timer::~Timer() {
    if (start_) (void)cudaEventDestroy(start_);
    if (stop_) (void)cudaEventDestroy(stop_);
}

// Code under test may mark data "persisting" in L2 (an access policy window), which a
// plain flush cannot evict; so the persisting set-aside goes back to zero and its lines
// are released before every flush. GPUs without persisting L2 (before sm_80) refuse
// these calls, which is fine: there is nothing to release.
void Timer::make_l2_cold() {
    std::size_t persisting = 0;
    if (cudaDeviceGetLimit(&persisting, cudaLimitPersistingL2CacheSize) != cudaSuccess) {
        (void)cudaGetLastError();
    } else if (persisting != 0 && cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0) != cudaSuccess) {
        (void)cudaGetLastError();
    }
    if (cudaCtxResetPersistingL2Cache() != cudaSuccess) (void)cudaGetLastError();
    if (l2_scratch_.bytes()) LABKIT_CHECK(cudaMemsetAsync(l2_scratch_.data(), 0, l2_scratch_.bytes()));
}

double Timer::time_sample(const std::function<void()>& prepare, const std::function<void()>& region) {
    prepare();
    make_l2_cold();
    LABKIT_CHECK(cudaEventRecord(start_));
    region();
    LABKIT_CHECK(cudaEventRecord(stop_));
    LABKIT_CHECK(cudaEventSynchronize(stop_));
    LABKIT_CHECK_LAUNCH();
    float ms = 0.0f;
    LABKIT_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return static_cast<double>(ms);
}

Timing Timer::measure(const std::function<void(int)>& prepare, const std::function<void()>& region,
                      const TimingOptions& options, const std::function<void(int)>& after_sample) {
    Timing t;
    for (int i = 0; i < options.warmup; ++i) {
        prepare(options.samples + i);
        region();
        LABKIT_CHECK_LAUNCH();
    }
    LABKIT_CHECK(cudaDeviceSynchronize());
    t.sm_clock_mhz_before = measure_sm_clock_mhz();
    t.samples_ms.reserve(static_cast<std::size_t>(options.samples));
    for (int i = 0; i < options.samples; ++i) {
        t.samples_ms.push_back(time_sample([&] { prepare(i); }, region));
        if (after_sample) after_sample(i);
    }
    t.sm_clock_mhz_after = measure_sm_clock_mhz();
    t.l2_flushed = flushes_l2();
    t.summary = summarise(t.samples_ms);
    return t;
}

}  // namespace labkit
