// Generated from labs/toy/lab.toml by cudalab.lab.labspec. Do not edit: edit lab.toml.
#pragma once

#include "labkit/lab_spec_types.hpp"

namespace lab_spec {

inline constexpr const char* kLabName = "toy";
inline constexpr const char* kLabTitle = "Toy lab";
inline constexpr bool kTakesBlock = false;
inline constexpr const char* kItemsName = "";

inline const std::vector<labkit::CaseSpec> kCases = {
    {"c_1", {{"n", 1LL}}, {}},
    {"c_7", {{"n", 7LL}}, {}},
    {"c_300", {{"n", 300LL}}, {}},
};

inline const std::vector<labkit::CaseSpec> kBenchCases = {
    {"b_1000", {{"n", 1000LL}}, {}},
};

inline const std::vector<labkit::OutputSpec> kOutputs = {
    {"c", labkit::DType::f32, labkit::Tolerance{0.0, 0.0, -1}, false},
};

inline double bytes_moved(const labkit::CaseSpec& c) {
    const double n = static_cast<double>(c.param("n"));
    return static_cast<double>(12 * n);
}

inline double flops(const labkit::CaseSpec& c) {
    (void)c;
    return static_cast<double>(0);
}

inline double items(const labkit::CaseSpec& c) {
    (void)c;
    return static_cast<double>(0);
}

}  // namespace lab_spec
