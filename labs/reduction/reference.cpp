// Lab reduction's CPU reference: linked only into the trusted checker and the tests.
#include "bound.hpp"
#include "problem.hpp"

namespace lab_reduction {

std::vector<labkit::Expected> reference(const labkit::CaseSpec&, const std::vector<labkit::HostArray>& inputs) {
    const auto x = inputs.at(0).as<float>();
    const double exact = reduction::reference_sum(x.data(), x.size());
    const double sum_abs = reduction::reference_sum_abs(x.data(), x.size());
    return {labkit::Expected{"sum", {1}, {exact}, {reduction::reduction_error_bound(x.size(), sum_abs)},
                             {reduction::long_chain_error_bound(x.size(), sum_abs)}, reduction::kNearMissAdvice,
                             /*fixed_order=*/true}};
}

}  // namespace lab_reduction
