#include "problem.hpp"

#include "bound.hpp"
#include "lab_spec.hpp"
#include "labkit/generate.hpp"

namespace lab_scan {

namespace {

bool is_integer(const labkit::CaseSpec& spec) { return spec.param("integer") != 0; }

std::vector<labkit::HostArray> make_inputs(const labkit::CaseSpec& spec, std::uint64_t seed) {
    const auto n = static_cast<std::uint64_t>(spec.param("n"));
    if (is_integer(spec)) {
        // |x| <= 4, so |prefix| <= 4n stays inside an int for every n the lab uses.
        auto x = labkit::HostArray::make<std::int32_t>("x", {n});
        labkit::fill_uniform_int(x.as<std::int32_t>(), seed, 0, -4, 4);
        return {std::move(x)};
    }
    auto x = labkit::HostArray::make<float>("x", {n});
    switch (spec.param("dist")) {
        case 0: labkit::fill_uniform(x.as<float>(), seed, 0, -1.0f, 1.0f); break;
        case 1:
            labkit::fill_uniform(x.as<float>(), seed, 0, 0.0f, 1.0f);
            x.as<float>()[0] = 16777216.0f;
            break;
        default: throw std::invalid_argument("case " + spec.name + ": dist must be 0 or 1 (see lab.toml [inputs])");
    }
    return {std::move(x)};
}

labkit::Expected float_reference(const std::string& name, std::span<const float> x, scan_bound::ScanKind kind) {
    labkit::Expected e{name, {x.size()}, std::vector<double>(x.size()), std::vector<double>(x.size())};
    scan_bound::reference_scan_float(x.data(), x.size(), kind, e.values.data(), e.allowed_abs.data());
    return e;
}

labkit::Expected int_reference(const std::string& name, std::span<const std::int32_t> x, scan_bound::ScanKind kind) {
    std::vector<std::int64_t> exact(x.size());
    scan_bound::reference_scan_int(x.data(), x.size(), kind, exact.data());
    labkit::Expected e{name, {x.size()}, std::vector<double>(x.size()), {}};
    for (std::size_t i = 0; i < x.size(); ++i) e.values[i] = static_cast<double>(exact[i]);
    return e;
}

std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs) {
    std::vector<labkit::Expected> expected;
    const bool inclusive = spec.param("inclusive") != 0, exclusive = spec.param("exclusive") != 0;
    if (is_integer(spec)) {
        const auto x = inputs.at(0).as<std::int32_t>();
        if (inclusive) expected.push_back(int_reference("inclusive_int", x, scan_bound::ScanKind::inclusive));
        if (exclusive) expected.push_back(int_reference("exclusive_int", x, scan_bound::ScanKind::exclusive));
    } else {
        const auto x = inputs.at(0).as<float>();
        if (inclusive) expected.push_back(float_reference("inclusive", x, scan_bound::ScanKind::inclusive));
        if (exclusive) expected.push_back(float_reference("exclusive", x, scan_bound::ScanKind::exclusive));
    }
    return expected;
}

}  // namespace

labkit::Problem problem() { return LABKIT_PROBLEM(make_inputs, reference); }

}  // namespace lab_scan
