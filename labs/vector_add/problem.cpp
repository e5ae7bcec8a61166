#include "problem.hpp"

#include "lab_spec.hpp"

namespace lab_vector_add {

namespace {

std::vector<labkit::InputSpec> inputs(const labkit::CaseSpec& spec) {
    const auto n = static_cast<std::uint64_t>(spec.param("n"));
    return {{"a", labkit::DType::f32, {n}, labkit::Fill::uniform_float(/*stream=*/0, -1.0f, 1.0f)},
            {"b", labkit::DType::f32, {n}, labkit::Fill::uniform_float(/*stream=*/1, -1.0f, 1.0f)}};
}

}  // namespace

labkit::Problem problem() { return LABKIT_PROBLEM(inputs); }

}  // namespace lab_vector_add
