// The doctest runner of every GPU test executable: where there is no usable CUDA
// device it says so and exits 4, which ctest reports as skipped (never as passed).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cstdio>

#include "labkit/exit_codes.hpp"

int main(int argc, char** argv) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        std::printf("SKIPPED: no CUDA device (%s); GPU tests need one.\n",
                    err == cudaSuccess ? "none found" : cudaGetErrorString(err));
        return labkit::kExitNoDevice;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
