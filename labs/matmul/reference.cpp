// Lab matmul's CPU reference: linked only into the trusted checker and the tests.
#include "labkit/matmul_reference.hpp"
#include "problem.hpp"

namespace lab_matmul {

std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs) {
    const auto m = static_cast<std::uint64_t>(spec.param("m"));
    const auto n = static_cast<std::uint64_t>(spec.param("n"));
    const auto k = static_cast<std::uint64_t>(spec.param("k"));
    const float* a = inputs.at(0).as<float>().data();
    const float* b = inputs.at(1).as<float>().data();
    // Each element against its bound, and the whole product (the sampled elements of a
    // bench case) against the limit that tells float multiply-adds from lower precision.
    if (m * n * k <= kFullReferenceMultiplyAdds)
        return {labkit::matmul_expected("c", m, n, k, labkit::matmul_reference(a, b, m, n, k))};
    return {labkit::matmul_expected("c", m, n, k, labkit::matmul_reference_sampled(a, b, m, n, k, kSampledLines))};
}

}  // namespace lab_matmul
