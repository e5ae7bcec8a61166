// Tests of labkit/driver_check.hpp: the sentence a student reads when the NVIDIA driver is
// older than the CUDA runtime a lab binary was built with.
#include <doctest/doctest.h>

#include <string>

#include "labkit/driver_check.hpp"

TEST_CASE("test_driver_check_version_text") {
    CHECK(labkit::cuda_version_text(12020) == "12.2");
    CHECK(labkit::cuda_version_text(13000) == "13.0");
    CHECK(labkit::cuda_version_text(12090) == "12.9");
    CHECK(labkit::cuda_version_text(11080) == "11.8");
}

TEST_CASE("test_driver_check_minimum_branch_per_cuda_major") {
    CHECK(labkit::minimum_driver_branch(13) == 580);
    CHECK(labkit::minimum_driver_branch(12) == 525);
    CHECK(labkit::minimum_driver_branch(11) == 450);
    CHECK(labkit::minimum_driver_branch(14) == 0);  // unknown: the message leaves the number out
}

TEST_CASE("test_driver_check_a_cuda_12_driver_under_the_cuda_13_runtime") {
    // A laptop with driver 535 (CUDA 12.2) running a binary built with CUDA 13.0.
    CHECK(labkit::describe_driver_too_old(12020, 13000) ==
          "your NVIDIA driver supports CUDA up to 12.2, older than the CUDA 13.0 runtime this program was built "
          "with (it needs a driver for CUDA 13.0 or newer: version 580 or newer): update the NVIDIA driver "
          "(nvidia-smi shows the version installed now)");
}

TEST_CASE("test_driver_check_a_later_minor_runtime_needs_only_the_major_s_first_driver") {
    // Minor version compatibility: a 13.2 runtime runs on a driver for CUDA 13.0, so a
    // CUDA 12.8 driver is told to get a driver for 13.0, not for 13.2.
    const std::string text = labkit::describe_driver_too_old(12080, 13020);
    CHECK(text.find("supports CUDA up to 12.8, older than the CUDA 13.2 runtime") != std::string::npos);
    CHECK(text.find("needs a driver for CUDA 13.0 or newer: version 580 or newer") != std::string::npos);
}

TEST_CASE("test_driver_check_a_driver_of_the_same_major_that_still_refuses") {
    // Not expected under minor version compatibility, but said truthfully if cudart says so.
    const std::string same = labkit::describe_driver_too_old(13000, 13020);
    CHECK(same.find("supports CUDA up to 13.0, older than the CUDA 13.2 runtime") != std::string::npos);
    CHECK(same.find("needs a driver for CUDA 13.2 or newer)") != std::string::npos);
    const std::string newer = labkit::describe_driver_too_old(13020, 13000);
    CHECK(newer.find("supports CUDA 13.2 but refuses the CUDA 13.0 runtime") != std::string::npos);
    CHECK(newer.find("update the NVIDIA driver") != std::string::npos);
}
