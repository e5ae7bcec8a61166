// Lab vector_add's CPU reference: linked only into the trusted checker and the tests.
#include "labkit/parallel.hpp"
#include "problem.hpp"

namespace lab_vector_add {

std::vector<labkit::Expected> reference(const labkit::CaseSpec&, const std::vector<labkit::HostArray>& inputs) {
    const auto a = inputs.at(0).as<float>();
    const auto b = inputs.at(1).as<float>();
    labkit::Expected c{"c", {a.size()}, labkit::prefaulted_vector<double>(a.size()), {}};
    // Each element on its own: the float sum, as the GPU must give it, spread over the cores.
    labkit::parallel_for(a.size(), std::size_t(1) << 18, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) c.values[i] = static_cast<double>(a[i] + b[i]);
    });
    return {std::move(c)};
}

}  // namespace lab_vector_add
