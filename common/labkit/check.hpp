// CUDA error checking for labs and student code. Two macros, in the shape of
// cuda-samples' checkCudaErrors/getLastCudaError:
//
//   LABKIT_CHECK(cudaMalloc(&p, bytes));   // wraps a call
//   my_kernel<<<grid, block>>>(...);
//   LABKIT_CHECK_LAUNCH();                 // checks right after a launch
//
// A failure throws labkit::CudaError carrying the call text, file and line, which the
// harness reports and turns into the CUDA-error exit code. "No CUDA device" (or a driver
// too old) throws labkit::NoDevice instead: that is "can't run here", never a failure.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace labkit {

struct CudaError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct NoDevice : std::runtime_error {
    using std::runtime_error::runtime_error;
};

namespace detail {

inline bool means_no_device(cudaError_t err) {
    return err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver;
}

inline void check_cuda(cudaError_t err, const char* what, const char* file, int line) {
    if (err == cudaSuccess) return;
    const std::string where = std::string(what) + " at " + file + ":" + std::to_string(line);
    if (means_no_device(err))
        throw NoDevice(std::string("no usable CUDA device (") + cudaGetErrorString(err) + ") in " + where);
    // Clear the error if it is not sticky, so the report is about this call alone.
    (void)cudaGetLastError();
    throw CudaError(std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err) + " in " + where);
}

}  // namespace detail

// Throws NoDevice unless at least one CUDA device can be used.
inline void require_device() {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        throw NoDevice(err == cudaSuccess ? std::string("no CUDA device found")
                                          : std::string("no usable CUDA device: ") + cudaGetErrorString(err));
    }
}

}  // namespace labkit

#define LABKIT_CHECK(call) ::labkit::detail::check_cuda((call), #call, __FILE__, __LINE__)
#define LABKIT_CHECK_LAUNCH() \
    ::labkit::detail::check_cuda(cudaGetLastError(), "the kernel launch just before this line", __FILE__, __LINE__)
