#include "problem.hpp"

#include "lab_spec.hpp"

namespace lab_transpose {

namespace {

std::vector<labkit::InputSpec> inputs(const labkit::CaseSpec& spec) {
    const auto rows = static_cast<std::uint64_t>(spec.param("rows"));
    const auto cols = static_cast<std::uint64_t>(spec.param("cols"));
    // Random values, not a ramp: a misplaced element is a wrong value, and nothing about an
    // element can be computed from its index instead of read.
    return {{"in", labkit::DType::f32, {rows, cols}, labkit::Fill::uniform_float(/*stream=*/0, -1.0f, 1.0f)}};
}

}  // namespace

labkit::Problem problem() { return LABKIT_PROBLEM(inputs); }

}  // namespace lab_transpose
