#include "problem.hpp"

#include <stdexcept>

#include "lab_spec.hpp"

namespace lab_reduction {

namespace {

std::vector<labkit::InputSpec> inputs(const labkit::CaseSpec& spec) {
    const auto n = static_cast<std::uint64_t>(spec.param("n"));
    labkit::Fill fill;
    switch (spec.param("dist")) {
        case 0: fill = labkit::Fill::uniform_float(0, -1.0f, 1.0f); break;
        case 1:  // the lecture's hard case: a sequential sum from x[0] loses every later value
            fill = labkit::Fill::uniform_float(0, 0.0f, 1.0f).with_element(0, 16777216.0);
            break;
        case 2: fill = labkit::Fill::uniform_float(0, 0.0f, 1.0f); break;
        default:
            throw std::invalid_argument("case " + spec.name + ": dist must be 0, 1 or 2 (see lab.toml [inputs])");
    }
    return {{"x", labkit::DType::f32, {n}, std::move(fill)}};
}

}  // namespace

labkit::Problem problem() { return LABKIT_PROBLEM(inputs); }

}  // namespace lab_reduction
