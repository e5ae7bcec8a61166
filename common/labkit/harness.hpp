// The lab binary's driver, written once for every lab. A lab supplies its Problem (CPU
// side: cases, inputs, reference) and a DeviceRun (GPU side: allocate and upload the
// inputs, call the student's API, expose the outputs); this runs the cases, checks
// them in process for the student's convenience, dumps outputs for the trusted checker,
// benchmarks against the copy roof and the library baseline, and writes JSON.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "labkit/device.hpp"
#include "labkit/problem.hpp"

namespace labkit {

class DeviceRun {
public:
    virtual ~DeviceRun() = default;
    // Calls the implementation under test once, on the default stream.
    virtual void run() = 0;
    // The outputs this case produces, named as in lab.toml.
    virtual std::vector<DeviceArray*> outputs() = 0;
    // A library doing the same job (CUB, cuBLAS, NPP), timed beside the student's code
    // in --bench. nullptr when the lab has none.
    virtual const char* library_name() const { return nullptr; }
    virtual void run_library() {}
};

using MakeDeviceRun =
    std::function<std::unique_ptr<DeviceRun>(const CaseSpec&, const std::vector<HostArray>& inputs)>;

int harness_main(int argc, char** argv, const Problem& problem, const MakeDeviceRun& make_run);

}  // namespace labkit
