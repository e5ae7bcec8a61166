// The timing protocol every lab binary uses, for student, reference and baseline code
// alike: CUDA events around the region only, warm-up runs first, then repeated samples;
// before every sample (outside the events) the caller's `prepare` runs (the harness
// generates that sample's fresh inputs and poisons the outputs there), any persisting
// L2 lines are released and the L2 cache is flushed; the SM clock is measured before and
// after, and the samples are summarised by median and spread.
#pragma once

#include <functional>
#include <vector>

#include "labkit/device.hpp"
#include "labkit/stats.hpp"

namespace labkit {

struct TimingOptions {
    int warmup = 5;
    int samples = 30;
};

struct Timing {
    std::vector<double> samples_ms;
    SampleSummary summary;
    bool l2_flushed = false;
    double sm_clock_mhz_before = 0.0;
    double sm_clock_mhz_after = 0.0;
};

class Timer {
public:
    explicit Timer(const DeviceInfo& device);
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;
    ~Timer();

    // One sample: prepare(), then a cold L2, then the region between two events; returns
    // the elapsed milliseconds once the region has finished on the device.
    double time_sample(const std::function<void()>& prepare, const std::function<void()>& region);

    // options.warmup untimed runs, then options.samples timed ones. prepare(i) runs before
    // each: i = 0..samples-1 for the timed samples and samples..samples+warmup-1 for the
    // warm-ups, so that every run can get inputs of its own. after_sample(i), when given,
    // runs after timed sample i has finished (outside the events).
    Timing measure(const std::function<void(int)>& prepare, const std::function<void()>& region,
                   const TimingOptions& options, const std::function<void(int)>& after_sample = {});

    bool flushes_l2() const { return l2_scratch_.bytes() > 0; }

    // Releases any persisting L2 lines and overwrites the L2 (asynchronously, on the
    // default stream), so that the next sample starts with none of its data cached.
    void make_l2_cold();

private:
    DeviceBuffer l2_scratch_;  // written between samples so no sample starts with warm data
    cudaEvent_t start_ = nullptr;
    cudaEvent_t stop_ = nullptr;
};

}  // namespace labkit
