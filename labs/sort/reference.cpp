// Lab sort's CPU reference: linked only into the trusted checker and the tests.
#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <unordered_map>

#include "problem.hpp"

namespace lab_sort {

namespace {

std::string at(const char* name, std::uint64_t i) { return std::string(name) + "[" + std::to_string(i) + "]"; }

// For a keys output: where the student's order first breaks, or, where it is ascending,
// that an element was lost, doubled or changed on the way.
std::function<std::string(const labkit::HostArray&, std::uint64_t)> explain_order(const char* name) {
    return [name](const labkit::HostArray& got, std::uint64_t) {
        const auto k = got.as<std::uint32_t>();
        for (std::uint64_t j = 1; j < k.size(); ++j)
            if (k[j - 1] > k[j])
                return "the order first breaks at " + at(name, j) + ": " + at(name, j - 1) + " = " +
                       std::to_string(k[j - 1]) + " > " + at(name, j) + " = " + std::to_string(k[j]);
        return std::string("the keys are in ascending order, so an element was lost, doubled or changed");
    };
}

// For the values of a pairs sort: whether the value at the first mismatch belongs to an
// equal key that came later in the input (stability broke) or to another key (the values
// did not move with their keys).
std::function<std::string(const labkit::HostArray&, std::uint64_t)> explain_stability(
    std::shared_ptr<const std::vector<std::uint32_t>> keys, std::shared_ptr<const std::vector<std::uint32_t>> values,
    std::shared_ptr<const std::vector<std::uint32_t>> order) {
    return [keys, values, order](const labkit::HostArray& got, std::uint64_t j) {
        std::unordered_map<std::uint32_t, std::uint64_t> position;  // value -> its input position
        for (std::uint64_t i = 0; i < values->size(); ++i) position.emplace((*values)[i], i);
        const std::uint32_t v = got.as<std::uint32_t>()[j];
        const std::uint64_t want = (*order)[j];
        const auto found = position.find(v);
        if (found == position.end()) return "pair_values[" + std::to_string(j) + "] = " + std::to_string(v) +
                                            " is no value of the input";
        const std::uint64_t from = found->second;
        const std::uint32_t key = (*keys)[want];
        if ((*keys)[from] == key)
            return "stability first breaks here: key " + std::to_string(key) + " is at input positions " +
                   std::to_string(want) + " and " + std::to_string(from) + ", and a stable sort keeps position " +
                   std::to_string(want) + "'s value (" + std::to_string((*values)[want]) + ") first";
        return "value " + std::to_string(v) + " belongs to key " + std::to_string((*keys)[from]) + " (input position " +
               std::to_string(from) + "), but the key here is " + std::to_string(key) +
               ": the values did not move with their keys";
    };
}

}  // namespace

std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs) {
    const auto keys = inputs.at(0).as<std::uint32_t>();
    const std::uint64_t n = keys.size();
    std::vector<labkit::Expected> expected;
    if (spec.param("keys")) {
        std::vector<std::uint32_t> sorted(keys.begin(), keys.end());
        std::sort(sorted.begin(), sorted.end());
        expected.push_back({"keys", {n}, std::vector<double>(sorted.begin(), sorted.end()), {}});
        expected.back().explain = explain_order("keys");
    }
    if (spec.param("pairs")) {
        const auto values = inputs.at(1).as<std::uint32_t>();
        // The stable order: the input positions, sorted by key, ties kept in input order.
        std::vector<std::uint32_t> order(n);
        std::iota(order.begin(), order.end(), 0u);
        std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return keys[a] < keys[b]; });
        labkit::Expected out_keys{"pair_keys", {n}, std::vector<double>(n), {}};
        labkit::Expected out_values{"pair_values", {n}, std::vector<double>(n), {}};
        for (std::uint64_t j = 0; j < n; ++j) {
            out_keys.values[j] = keys[order[j]];
            out_values.values[j] = values[order[j]];
        }
        out_keys.explain = explain_order("pair_keys");
        out_values.explain = explain_stability(std::make_shared<const std::vector<std::uint32_t>>(keys.begin(), keys.end()),
                                               std::make_shared<const std::vector<std::uint32_t>>(values.begin(), values.end()),
                                               std::make_shared<const std::vector<std::uint32_t>>(std::move(order)));
        expected.push_back(std::move(out_keys));
        expected.push_back(std::move(out_values));
    }
    return expected;
}

}  // namespace lab_sort
