// Lab vector_add's CPU reference: linked only into the trusted checker and the tests.
#include "problem.hpp"

namespace lab_vector_add {

std::vector<labkit::Expected> reference(const labkit::CaseSpec&, const std::vector<labkit::HostArray>& inputs) {
    const auto a = inputs.at(0).as<float>();
    const auto b = inputs.at(1).as<float>();
    labkit::Expected c{"c", {a.size()}, std::vector<double>(a.size()), {}};
    for (std::size_t i = 0; i < a.size(); ++i) c.values[i] = static_cast<double>(a[i] + b[i]);
    return {std::move(c)};
}

}  // namespace lab_vector_add
