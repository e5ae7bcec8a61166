// CUDA error checking for labs and student code. Two macros, in the shape of
// cuda-samples' checkCudaErrors/getLastCudaError:
//
//   LABKIT_CHECK(cudaMalloc(&p, bytes));   // wraps a call
//   my_kernel<<<grid, block>>>(...);
//   LABKIT_CHECK_LAUNCH();                 // checks right after a launch
//
// A failure throws labkit::CudaError carrying the call text, file and line, which the
// harness reports and turns into the CUDA-error exit code. "No CUDA device" (or a driver
// too old, labkit::DriverTooOld) throws labkit::NoDevice instead: that is "can't run
// here", never a failure.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "labkit/driver_check.hpp"

namespace labkit {

struct CudaError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Nothing can run here. reason() is the run JSON's "reason": "no_device", or
// "driver_too_old" (DriverTooOld), or "insufficient_memory" (the harness, for a --paced
// case that cannot fit in the GPU's free memory).
struct NoDevice : std::runtime_error {
    explicit NoDevice(const std::string& what, std::string reason = "no_device")
        : std::runtime_error(what), reason_(std::move(reason)) {}
    const std::string& reason() const { return reason_; }

private:
    std::string reason_;
};

// A GPU and a driver are there, but the driver is older than the CUDA runtime this
// program was built with: the student's fix is a driver update, which the message says.
struct DriverTooOld : NoDevice {
    DriverTooOld(int driver, int runtime)
        : NoDevice(describe_driver_too_old(driver, runtime), "driver_too_old"),
          driver_version(driver),
          runtime_version(runtime) {}
    int driver_version;   // cudaDriverGetVersion: the newest CUDA the driver supports (12020 = 12.2)
    int runtime_version;  // cudaRuntimeGetVersion (13000 = 13.0)
};

namespace detail {

inline bool means_no_device(cudaError_t err) {
    return err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver;
}

// cudart says cudaErrorInsufficientDriver both where no NVIDIA driver is loaded (a machine
// without a GPU) and where the driver is older than the runtime. cudaDriverGetVersion
// tells them apart: it reports 0 when there is no driver, and otherwise the newest CUDA
// version the driver supports (it works with any driver, however old).
[[noreturn]] inline void throw_no_device(cudaError_t err, const std::string& where) {
    int driver = 0, runtime = 0;
    if (err == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0 &&
        cudaRuntimeGetVersion(&runtime) == cudaSuccess)
        throw DriverTooOld(driver, runtime);
    std::string what = err == cudaErrorInsufficientDriver ? std::string("no CUDA device: no NVIDIA driver is loaded")
                                                          : std::string("no CUDA device found");
    if (!where.empty()) what += " (" + std::string(cudaGetErrorString(err)) + " in " + where + ")";
    throw NoDevice(what);
}

inline void check_cuda(cudaError_t err, const char* what, const char* file, int line) {
    if (err == cudaSuccess) return;
    const std::string where = std::string(what) + " at " + file + ":" + std::to_string(line);
    if (means_no_device(err)) throw_no_device(err, where);
    // Clear the error if it is not sticky, so the report is about this call alone.
    (void)cudaGetLastError();
    throw CudaError(std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err) + " in " + where);
}

}  // namespace detail

// Throws NoDevice unless at least one CUDA device can be used.
inline void require_device() {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaSuccess && count > 0) return;
    (void)cudaGetLastError();
    if (err == cudaSuccess || detail::means_no_device(err))
        detail::throw_no_device(err == cudaSuccess ? cudaErrorNoDevice : err, "");
    throw NoDevice(std::string("no usable CUDA device: ") + cudaGetErrorString(err));
}

}  // namespace labkit

#define LABKIT_CHECK(call) ::labkit::detail::check_cuda((call), #call, __FILE__, __LINE__)
#define LABKIT_CHECK_LAUNCH() \
    ::labkit::detail::check_cuda(cudaGetLastError(), "the kernel launch just before this line", __FILE__, __LINE__)
