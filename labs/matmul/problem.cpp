#include "problem.hpp"

#include <stdexcept>

#include "lab_spec.hpp"

namespace lab_matmul {

namespace {

std::vector<labkit::InputSpec> inputs(const labkit::CaseSpec& spec) {
    const auto m = static_cast<std::uint64_t>(spec.param("m"));
    const auto n = static_cast<std::uint64_t>(spec.param("n"));
    const auto k = static_cast<std::uint64_t>(spec.param("k"));
    if (m < 1 || n < 1 || k < 1)
        throw std::invalid_argument("case " + spec.name + ": m, n and k must be at least 1");
    float lo = 0.0f;
    switch (spec.param("dist")) {
        case 0: lo = -1.0f; break;  // mixed signs: products cancel
        case 1: lo = 0.0f; break;   // all positive: nothing cancels, every term shows
        default:
            throw std::invalid_argument("case " + spec.name + ": dist must be 0 or 1 (see lab.toml [inputs])");
    }
    return {{"a", labkit::DType::f32, {m, k}, labkit::Fill::uniform_float(0, lo, 1.0f)},
            {"b", labkit::DType::f32, {k, n}, labkit::Fill::uniform_float(1, lo, 1.0f)}};
}

}  // namespace

labkit::Problem problem() { return LABKIT_PROBLEM(inputs); }

}  // namespace lab_matmul
