#include "problem.hpp"

#include "bound.hpp"
#include "lab_spec.hpp"
#include "labkit/generate.hpp"

namespace lab_reduction {

namespace {

std::vector<labkit::HostArray> make_inputs(const labkit::CaseSpec& spec, std::uint64_t seed) {
    const auto n = static_cast<std::uint64_t>(spec.param("n"));
    auto x = labkit::HostArray::make<float>("x", {n});
    auto values = x.as<float>();
    switch (spec.param("dist")) {
        case 0: labkit::fill_uniform(values, seed, 0, -1.0f, 1.0f); break;
        case 1:  // the lecture's hard case: a sequential sum from x[0] loses every later value
            labkit::fill_uniform(values, seed, 0, 0.0f, 1.0f);
            values[0] = 16777216.0f;
            break;
        case 2: labkit::fill_uniform(values, seed, 0, 0.0f, 1.0f); break;
        default:
            throw std::invalid_argument("case " + spec.name + ": dist must be 0, 1 or 2 (see lab.toml [inputs])");
    }
    return {std::move(x)};
}

std::vector<labkit::Expected> reference(const labkit::CaseSpec&, const std::vector<labkit::HostArray>& inputs) {
    const auto x = inputs.at(0).as<float>();
    const double exact = reduction::reference_sum(x.data(), x.size());
    const double bound = reduction::reduction_error_bound(x.size(), reduction::reference_sum_abs(x.data(), x.size()));
    return {labkit::Expected{"sum", {1}, {exact}, {bound}}};
}

}  // namespace

labkit::Problem problem() { return LABKIT_PROBLEM(make_inputs, reference); }

}  // namespace lab_reduction
