// Lab scan's CPU reference: linked only into the trusted checker and the tests.
#include "bound.hpp"
#include "problem.hpp"

namespace lab_scan {

namespace {

labkit::Expected float_reference(const std::string& name, std::span<const float> x, scan_bound::ScanKind kind) {
    labkit::Expected e{name, {x.size()}, std::vector<double>(x.size()), std::vector<double>(x.size()),
                       std::vector<double>(x.size()), scan_bound::kNearMissAdvice};
    scan_bound::reference_scan_float(x.data(), x.size(), kind, e.values.data(), e.allowed_abs.data(),
                                     e.near_miss_abs.data());
    return e;
}

labkit::Expected int_reference(const std::string& name, std::span<const std::int32_t> x, scan_bound::ScanKind kind) {
    std::vector<std::int64_t> exact(x.size());
    scan_bound::reference_scan_int(x.data(), x.size(), kind, exact.data());
    labkit::Expected e{name, {x.size()}, std::vector<double>(x.size()), {}};
    for (std::size_t i = 0; i < x.size(); ++i) e.values[i] = static_cast<double>(exact[i]);
    return e;
}

}  // namespace

std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs) {
    std::vector<labkit::Expected> expected;
    const bool inclusive = spec.param("inclusive") != 0, exclusive = spec.param("exclusive") != 0;
    if (spec.param("integer") != 0) {
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

}  // namespace lab_scan
