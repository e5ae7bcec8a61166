// Lab matmul's CPU reference: linked only into the trusted checker and the tests.
#include "labkit/matmul_reference.hpp"
#include "problem.hpp"

namespace lab_matmul {

std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs) {
    const auto m = static_cast<std::uint64_t>(spec.param("m"));
    const auto n = static_cast<std::uint64_t>(spec.param("n"));
    const auto k = static_cast<std::uint64_t>(spec.param("k"));
    labkit::MatmulExpected product =
        labkit::matmul_reference(inputs.at(0).as<float>().data(), inputs.at(1).as<float>().data(), m, n, k);
    // Any order of the multiply-adds is allowed, so a correct answer may change from run to
    // run (a split k added up with atomics); the spread then counts against the bound.
    return {labkit::Expected{"c", {m, n}, std::move(product.c), std::move(product.bound), {}, {},
                             /*fixed_order=*/false}};
}

}  // namespace lab_matmul
