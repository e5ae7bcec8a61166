#include "problem.hpp"

#include <stdexcept>

#include "lab_spec.hpp"

namespace lab_scan {

namespace {

std::vector<labkit::InputSpec> inputs(const labkit::CaseSpec& spec) {
    const auto n = static_cast<std::uint64_t>(spec.param("n"));
    if (spec.param("integer") != 0)  // |x| <= 4, so |prefix| <= 4n stays inside an int for every n the lab uses
        return {{"x", labkit::DType::i32, {n}, labkit::Fill::uniform_int(0, -4, 4)}};
    switch (spec.param("dist")) {
        case 0: return {{"x", labkit::DType::f32, {n}, labkit::Fill::uniform_float(0, -1.0f, 1.0f)}};
        case 1:
            return {{"x", labkit::DType::f32, {n},
                     labkit::Fill::uniform_float(0, 0.0f, 1.0f).with_element(0, 16777216.0)}};
        default: throw std::invalid_argument("case " + spec.name + ": dist must be 0 or 1 (see lab.toml [inputs])");
    }
}

}  // namespace

labkit::Problem problem() { return LABKIT_PROBLEM(inputs); }

}  // namespace lab_scan
