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

void Timer::flush_l2() {
    if (l2_scratch_.bytes()) LABKIT_CHECK(cudaMemsetAsync(l2_scratch_.data(), 0, l2_scratch_.bytes()));
}

Timing Timer::measure(const std::function<void()>& prepare, const std::function<void()>& region,
                      const TimingOptions& options, const std::function<void(int)>& after_sample) {
    Timing t;
    for (int i = 0; i < options.warmup; ++i) {
        prepare();
        region();
        LABKIT_CHECK_LAUNCH();
    }
    LABKIT_CHECK(cudaDeviceSynchronize());
    t.sm_clock_mhz_before = measure_sm_clock_mhz();
    t.samples_ms.reserve(static_cast<std::size_t>(options.samples));
    for (int i = 0; i < options.samples; ++i) {
        prepare();
        flush_l2();
        LABKIT_CHECK(cudaEventRecord(start_));
        region();
        LABKIT_CHECK(cudaEventRecord(stop_));
        LABKIT_CHECK(cudaEventSynchronize(stop_));
        LABKIT_CHECK_LAUNCH();
        float ms = 0.0f;
        LABKIT_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
        t.samples_ms.push_back(static_cast<double>(ms));
        if (after_sample) after_sample(i);
    }
    t.sm_clock_mhz_after = measure_sm_clock_mhz();
    t.l2_flushed = l2_scratch_.bytes() > 0;
    t.summary = summarise(t.samples_ms);
    return t;
}

}  // namespace labkit
