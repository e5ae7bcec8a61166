// The types the generated lab_spec.hpp (from lab.toml) is written in: cases with their
// integer parameters, outputs with their element type and tolerance.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "labkit/dtype.hpp"

namespace labkit {

// Pass when |got - expected| <= abs + rel * |expected|, or when got is within `ulp`
// units in the last place of expected (ulp < 0 turns the ULP criterion off).
struct Tolerance {
    double abs = 0.0;
    double rel = 0.0;
    std::int64_t ulp = -1;
};

struct CaseSpec {
    std::string name;
    std::vector<std::pair<std::string, std::int64_t>> params;
    // Text parameters: the dataset image a case is made from (image = "camera") or tiled
    // with (tiles = "chelsea").
    std::vector<std::pair<std::string, std::string>> texts = {};

    std::int64_t param(std::string_view key) const {
        for (const auto& [k, v] : params)
            if (k == key) return v;
        throw std::out_of_range("case '" + name + "' has no parameter '" + std::string(key) +
                                "': add it to the case in lab.toml");
    }

    // The text parameter `key`, or "" when the case has none.
    std::string text(std::string_view key) const {
        for (const auto& [k, v] : texts)
            if (k == key) return v;
        return {};
    }
};

struct OutputSpec {
    std::string name;
    DType dtype;
    Tolerance tolerance;
    bool computed = false;  // the lab's reference derives the bound per element
};

// Find a case by name in a list; nullptr when absent.
inline const CaseSpec* find_case(const std::vector<CaseSpec>& cases, std::string_view name) {
    for (const auto& c : cases)
        if (c.name == name) return &c;
    return nullptr;
}

}  // namespace labkit
