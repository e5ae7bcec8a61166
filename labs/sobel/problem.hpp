// Lab sobel, CPU side: the cases and how their inputs follow from the seed or a dataset
// image (problem.cpp, in every lab binary), and the reference (reference.cpp, linked only
// into the trusted checker and the tests).
#pragma once

#include <cstdint>

#include "labkit/problem.hpp"

namespace lab_sobel {

labkit::Problem problem();

// The lab sheet's Sobel loop on the CPU: 255 where the squared gradient magnitude exceeds
// the case's threshold, 0 elsewhere and on the border.
std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs);

// The squared gradient magnitude sum1^2 + sum2^2 at an interior pixel (x, y).
std::int64_t magnitude_squared(const std::uint8_t* image, std::uint64_t width, std::uint64_t x, std::uint64_t y);

}  // namespace lab_sobel
