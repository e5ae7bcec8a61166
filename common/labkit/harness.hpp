// The lab binary's driver, written once for every lab. A lab supplies its Problem (the
// cases and how their inputs follow from a seed) and a DeviceRun (allocate the outputs
// and workspace, call the student's API, expose the outputs); this fills the inputs on
// the GPU, runs the cases and dumps their outputs for the trusted checker, and times the
// bench cases: on its own (--bench, with a fresh input set for every sample, against
// the copy roof and the library baseline) or paced sample by sample by the grader
// (--paced, docs/architecture.md). It holds no CPU reference and judges nothing.
// Before each bench case it checks that the case fits in the GPU's free memory
// (labkit/memory_fit.hpp) and skips, with a sentence, one that does not.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "labkit/device.hpp"
#include "labkit/memory_fit.hpp"
#include "labkit/problem.hpp"

namespace labkit {

class DeviceRun {
public:
    virtual ~DeviceRun() = default;
    // Calls the implementation under test once, on the default stream, on whatever the
    // input arrays hold now (the harness refills them between calls).
    virtual void run() = 0;
    // The outputs this case produces, named as in lab.toml.
    virtual std::vector<DeviceArray*> outputs() = 0;
    // Device memory handed to the student's code whose contents the API leaves
    // unspecified: the harness fills it with garbage before every call, so code that
    // relies on zeros, or on what an earlier call left there, fails every time.
    virtual std::vector<DeviceBuffer*> workspaces() { return {}; }
    // A library doing the same job (CUB, cuBLAS, NPP), timed beside the student's code
    // in --bench. nullptr when the lab has none.
    virtual const char* library_name() const { return nullptr; }
    virtual void run_library() {}
    // Why the lab's library baseline is missing from this run when library_name() is
    // nullptr although the lab has one (cuBLAS could not be loaded, say); empty otherwise.
    virtual std::string library_unavailable() const { return {}; }
};

// The case's input arrays, allocated by the harness in the order of problem.inputs(spec)
// and refilled before every call; a DeviceRun keeps the pointers.
using MakeDeviceRun =
    std::function<std::unique_ptr<DeviceRun>(const CaseSpec&, const std::vector<DeviceArray*>& inputs)>;

// What the lab's DeviceRun will allocate for a case besides its inputs (its outputs, the
// workspace the lab's API asks for, the library baseline's scratch), computed without
// allocating anything. The harness adds the inputs and its own buffers to it and compares
// the sum with the GPU's free memory before a bench case; without it only those are counted.
using EstimateRunMemory = std::function<RunMemory(const CaseSpec&)>;

// The thread-block shape `--block WxH` asked for, for a lab whose API takes one (sobel):
// 0 x 0 when none was given, and the implementation chooses its own.
struct BlockShape {
    unsigned x = 0;
    unsigned y = 0;
};
BlockShape requested_block();

int harness_main(int argc, char** argv, const Problem& problem, const MakeDeviceRun& make_run,
                 const EstimateRunMemory& run_memory = {});

// Read by the harness, for tests: when set (a number of bytes), the GPU's free memory is
// taken to be at most this much, so that a GPU test on a large GPU can see a case skipped.
inline constexpr const char* kGpuMemoryLimitEnv = "CUDALAB_GPU_MEMORY_LIMIT";

}  // namespace labkit
