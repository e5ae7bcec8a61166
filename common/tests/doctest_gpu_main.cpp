// The doctest runner of every GPU test executable: where there is no usable CUDA
// device it says so and exits 4, which ctest reports as skipped (never as passed).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "labkit/check.hpp"
#include "labkit/exit_codes.hpp"

int main(int argc, char** argv) {
    try {
        labkit::require_device();
    } catch (const labkit::NoDevice& e) {  // no GPU, no driver, or a driver too old: the sentence says which
        std::printf("SKIPPED: %s; GPU tests need a usable CUDA device.\n", e.what());
        return labkit::kExitNoDevice;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
