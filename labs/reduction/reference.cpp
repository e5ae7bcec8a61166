// Lab reduction's CPU reference: linked only into the trusted checker and the tests.
#include <cmath>
#include <string>
#include <utility>

#include "bound.hpp"
#include "problem.hpp"

namespace lab_reduction {

namespace {

// What the verdict says when the sum is within its bound but beyond
// reduction::typical_error_limit, after "... is within its own bound, but ".
std::string typical_error_explanation(std::size_t n, double sum_abs, double error, double limit) {
    const auto in_u = [&](double e) {
        return labkit::format_value(std::round(e / sum_abs / reduction::kUnitRoundoff * 1000.0) / 1000.0);
    };
    return "it is off by " + labkit::format_value(error) + " (" + in_u(error) +
           " u of sum |x|, u = 2^-24), far more than float additions in an order the lab allows are: with "
           "rounding errors that do not all lean one way, a tree over these " + std::to_string(n) +
           " elements stays below " + labkit::format_value(limit) + " (" + in_u(limit) +
           " u). Errors that large come from adding in lower precision, the elements converted to bf16 or "
           "fp16 (half2 arithmetic, tensor cores) before they are added, or from a long chain of float "
           "additions such as atomicAdd of every block's sum, which the lab's rule excludes. Add the elements "
           "as floats and combine partial sums as a tree (handout: 'The tolerance').";
}

}  // namespace

std::vector<labkit::Expected> reference(const labkit::CaseSpec&, const std::vector<labkit::HostArray>& inputs) {
    const auto x = inputs.at(0).as<float>();
    const std::size_t n = x.size();
    const double exact = reduction::reference_sum(x.data(), n);
    const double sum_abs = reduction::reference_sum_abs(x.data(), n);
    const auto squares = reduction::reference_squares_and_largest(x.data(), n);
    const double bound = reduction::reduction_error_bound(n, sum_abs);
    labkit::Expected expected{"sum", {1}, {exact}, {bound}, {reduction::long_chain_error_bound(n, sum_abs)},
                              reduction::kNearMissAdvice, /*fixed_order=*/true};
    // The error itself against what float trees give (bound.hpp: lower precision). One
    // element: its root mean square is its error, as a fraction of the bound.
    if (bound > 0) {
        expected.rms_limit = reduction::typical_error_limit(n, exact, squares.sum_squares, squares.max_abs) / bound;
        expected.rms_explain = [n, sum_abs, bound](double rms, double limit) {
            return typical_error_explanation(n, sum_abs, rms * bound, limit * bound);
        };
    }
    return {std::move(expected)};
}

}  // namespace lab_reduction
