#include "problem.hpp"

#include <stdexcept>

#include "lab_spec.hpp"

namespace lab_sort {

namespace {

labkit::Fill key_fill(const labkit::CaseSpec& spec, std::uint64_t n) {
    switch (spec.param("dist")) {
        case 0: return labkit::Fill::uniform_u32(0, 0, 0xFFFFFFFFu);
        case 1: return labkit::Fill::uniform_u32(0, 0, 15);  // many duplicates: stability shows
        case 2: return labkit::Fill::ramp_u32(7, 3);         // already sorted, distinct
        case 3: return labkit::Fill::ramp_u32(static_cast<std::uint32_t>(7 + 3 * (n - 1)), -3);  // reversed
        case 4: return labkit::Fill::uniform_u32(0, 0x9E3779B9u, 0x9E3779B9u);  // all equal
        case 5:  // uniform, with the largest and smallest keys placed where a sentinel would hide them
            return labkit::Fill::uniform_u32(0, 0, 0xFFFFFFFFu).with_element(0, 4294967295.0).with_element(n - 1, 0.0);
        default:
            throw std::invalid_argument("case " + spec.name + ": dist must be 0 to 5 (see lab.toml [inputs])");
    }
}

std::vector<labkit::InputSpec> inputs(const labkit::CaseSpec& spec) {
    const auto n = static_cast<std::uint64_t>(spec.param("n"));
    std::vector<labkit::InputSpec> arrays{{"keys", labkit::DType::u32, {n}, key_fill(spec, n)}};
    // A value is its element's input index: equal keys must come out with their values
    // ascending, so the checker sees at once whether a sort kept them in input order.
    if (spec.param("pairs")) arrays.push_back({"values", labkit::DType::u32, {n}, labkit::Fill::ramp_u32(0, 1)});
    return arrays;
}

}  // namespace

labkit::Problem problem() { return LABKIT_PROBLEM(inputs); }

}  // namespace lab_sort
