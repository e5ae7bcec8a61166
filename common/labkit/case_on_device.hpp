// One case on the device: its input arrays (refilled from a seed before every call) and
// the lab's DeviceRun over them (which allocates the outputs and any workspace, and calls
// the implementation). The harness's correctness run and benchmark, the paced program and
// the grader's auditor (labkit/audit.hpp) all build a case this way, so a case made while
// an ArenaPlacement is alive lays its arrays out the same way in every process.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "labkit/device.hpp"
#include "labkit/harness.hpp"
#include "labkit/host_array.hpp"
#include "labkit/problem.hpp"

namespace labkit {

class CaseOnDevice {
public:
    CaseOnDevice(const Problem& problem, const MakeDeviceRun& make_run, const CaseSpec& spec);

    // Fresh inputs from `seed`, poisoned outputs and a garbage workspace: a call that
    // skips any work, or that returns something remembered from an earlier call, leaves
    // wrong values behind.
    void prepare(std::uint64_t seed) {
        fill_inputs(seed);
        poison_outputs();
        fill_workspaces_with_garbage();
    }
    void fill_inputs(std::uint64_t seed);
    void poison_outputs();
    void fill_workspaces_with_garbage();

    std::vector<HostArray> download_outputs();
    std::size_t largest_output_bytes();

    const std::vector<std::unique_ptr<DeviceArray>>& inputs() const { return inputs_; }
    DeviceRun& run() { return *run_; }

private:
    std::vector<InputSpec> input_specs_;
    std::vector<std::unique_ptr<DeviceArray>> inputs_;
    std::unique_ptr<DeviceRun> run_;
};

}  // namespace labkit
