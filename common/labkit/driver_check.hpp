// A driver too old for the CUDA runtime a lab binary was built with, said in words a
// student can act on. cudart reports it as cudaErrorInsufficientDriver, the same error it
// gives on a machine with no NVIDIA driver at all; check.hpp tells the two apart with
// cudaDriverGetVersion (0 when no driver is loaded) and builds the message here. Pure
// functions (no CUDA call), so that the message is unit-tested on a machine without a GPU.
// Inline, like check.hpp that uses them: student code that uses LABKIT_CHECK then needs
// nothing of labkit's objects (the symbol check sees only what the harness defines).
#pragma once

#include <string>

namespace labkit {

// "12.2" from the 1000 * major + 10 * minor form that cudaDriverGetVersion and
// cudaRuntimeGetVersion return (12020).
inline std::string cuda_version_text(int version) {
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// The first NVIDIA driver branch that supports CUDA `cuda_major`.x (580 for CUDA 13, 525
// for 12, 450 for 11: NVIDIA's minor version compatibility table), or 0 for a major this
// table does not know.
inline int minimum_driver_branch(int cuda_major) {
    switch (cuda_major) {  // docs.nvidia.com/deploy/cuda-compatibility, "Minor Version Compatibility"
        case 13: return 580;
        case 12: return 525;
        case 11: return 450;
        default: return 0;
    }
}

// The sentence for a driver (cudaDriverGetVersion: the newest CUDA version it supports)
// that refuses this runtime (cudaRuntimeGetVersion), e.g. "your NVIDIA driver supports
// CUDA up to 12.2, older than the CUDA 13.0 runtime this program was built with (it needs
// a driver for CUDA 13.0 or newer: version 580 or newer): update the NVIDIA driver ...".
inline std::string describe_driver_too_old(int driver_version, int runtime_version) {
    const int major = runtime_version / 1000;
    // Since CUDA 11 a driver of a major family runs every minor release of that family's
    // runtime, so a driver for CUDA 13.0 is enough for a 13.x runtime. Where the driver is
    // already of the runtime's family and still refuses it, it needs the runtime's own version.
    const int needed = driver_version < major * 1000 ? major * 1000 : runtime_version;
    std::string text = "your NVIDIA driver supports CUDA ";
    text += driver_version < runtime_version
                ? "up to " + cuda_version_text(driver_version) + ", older than the CUDA " +
                      cuda_version_text(runtime_version) + " runtime this program was built with"
                : cuda_version_text(driver_version) + " but refuses the CUDA " + cuda_version_text(runtime_version) +
                      " runtime this program was built with";
    text += " (it needs a driver for CUDA " + cuda_version_text(needed) + " or newer";
    if (const int branch = minimum_driver_branch(needed / 1000); branch != 0 && needed == major * 1000)
        text += ": version " + std::to_string(branch) + " or newer";
    text += "): update the NVIDIA driver (nvidia-smi shows the version installed now)";
    return text;
}

}  // namespace labkit
