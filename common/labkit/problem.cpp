#include "labkit/problem.hpp"

#include <stdexcept>

namespace labkit {

const CaseSpec* Problem::find(const std::string& case_name) const {
    if (const auto* c = find_case(cases, case_name)) return c;
    return find_case(bench_cases, case_name);
}

const OutputSpec& Problem::output(const std::string& output_name) const {
    for (const auto& o : outputs)
        if (o.name == output_name) return o;
    throw std::logic_error("lab '" + name + "' has no output '" + output_name + "' in lab.toml");
}

std::vector<HostArray> make_host_inputs(const Problem& problem, const CaseSpec& spec, std::uint64_t seed) {
    std::vector<HostArray> arrays;
    for (const InputSpec& input : problem.inputs(spec)) arrays.push_back(generate_on_host(input, seed));
    return arrays;
}

}  // namespace labkit
