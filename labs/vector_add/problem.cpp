#include "problem.hpp"

#include "lab_spec.hpp"
#include "labkit/generate.hpp"

namespace lab_vector_add {

namespace {

std::vector<labkit::HostArray> make_inputs(const labkit::CaseSpec& spec, std::uint64_t seed) {
    const auto n = static_cast<std::uint64_t>(spec.param("n"));
    auto a = labkit::HostArray::make<float>("a", {n});
    auto b = labkit::HostArray::make<float>("b", {n});
    labkit::fill_uniform(a.as<float>(), seed, /*stream=*/0, -1.0f, 1.0f);
    labkit::fill_uniform(b.as<float>(), seed, /*stream=*/1, -1.0f, 1.0f);
    return {std::move(a), std::move(b)};
}

}  // namespace

std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs) {
    const auto a = inputs.at(0).as<float>();
    const auto b = inputs.at(1).as<float>();
    labkit::Expected c{"c", {a.size()}, std::vector<double>(a.size()), {}};
    for (std::size_t i = 0; i < a.size(); ++i) c.values[i] = static_cast<double>(a[i] + b[i]);
    (void)spec;
    return {std::move(c)};
}

labkit::Problem problem() { return LABKIT_PROBLEM(make_inputs, reference); }

}  // namespace lab_vector_add
