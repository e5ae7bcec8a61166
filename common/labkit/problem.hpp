// What a lab tells labkit about itself: its cases and outputs (from the generated
// lab_spec.hpp), how to make a case's inputs from a seed, and the CPU reference. The
// harness and the trusted checker are both written once, against this description.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "labkit/compare.hpp"
#include "labkit/host_array.hpp"
#include "labkit/lab_spec_types.hpp"

namespace labkit {

struct Problem {
    std::string name;
    std::vector<CaseSpec> cases;
    std::vector<CaseSpec> bench_cases;
    std::vector<OutputSpec> outputs;
    std::function<double(const CaseSpec&)> bytes_moved;
    std::function<double(const CaseSpec&)> flops;
    // Inputs are a pure function of (case, seed): the checker regenerates them.
    std::function<std::vector<HostArray>(const CaseSpec&, std::uint64_t seed)> make_inputs;
    // One Expected per output this case produces (a case may produce only some of the
    // lab's outputs); matched to outputs and dumps by name.
    std::function<std::vector<Expected>(const CaseSpec&, const std::vector<HostArray>& inputs)> reference;

    const CaseSpec* find(const std::string& case_name) const;
    const OutputSpec& output(const std::string& output_name) const;  // throws if unknown
};

// A lab's Problem: what its generated lab_spec.hpp says (name, cases, outputs, models)
// plus its input generator and reference. Used once in every labs/<lab>/problem.cpp.
#define LABKIT_PROBLEM(make_inputs_fn, reference_fn)                                             \
    (::labkit::Problem{lab_spec::kLabName, lab_spec::kCases, lab_spec::kBenchCases, lab_spec::kOutputs, \
                       lab_spec::bytes_moved, lab_spec::flops, (make_inputs_fn), (reference_fn)})

}  // namespace labkit
