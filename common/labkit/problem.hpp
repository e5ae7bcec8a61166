// What a lab tells labkit about itself: its cases and outputs (from the generated
// lab_spec.hpp) and how a case's inputs follow from a seed. The harness (the program a
// student's code is linked into) is written against this alone; the CPU reference is a
// separate function that only the trusted checker links, so no lab binary contains it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "labkit/compare.hpp"
#include "labkit/host_array.hpp"
#include "labkit/inputs.hpp"
#include "labkit/lab_spec_types.hpp"

namespace labkit {

struct Problem {
    std::string name;
    std::vector<CaseSpec> cases;
    std::vector<CaseSpec> bench_cases;
    std::vector<OutputSpec> outputs;
    std::function<double(const CaseSpec&)> bytes_moved;
    std::function<double(const CaseSpec&)> flops;
    // How each input array of a case is made: every element a pure function of the
    // seed, so the checker regenerates exactly what the harness generated on the GPU.
    std::function<std::vector<InputSpec>(const CaseSpec&)> inputs;
    // How many items (pixels, keys) a bench case processes, for items per second; 0 where
    // the lab counts none. items_name says what they are.
    std::function<double(const CaseSpec&)> items = {};
    std::string items_name = {};
    // The lab's API takes a thread-block shape, which --block WxH chooses.
    bool takes_block = false;

    const CaseSpec* find(const std::string& case_name) const;
    const OutputSpec& output(const std::string& output_name) const;  // throws if unknown
};

// The CPU reference: one Expected per output this case produces (a case may produce
// only some of the lab's outputs), matched to outputs and dumps by name.
using Reference = std::function<std::vector<Expected>(const CaseSpec&, const std::vector<HostArray>& inputs)>;

// The case's inputs, generated on the CPU from the seed.
std::vector<HostArray> make_host_inputs(const Problem& problem, const CaseSpec& spec, std::uint64_t seed);

// A lab's Problem: what its generated lab_spec.hpp says (name, cases, outputs, models)
// plus its input description. Used once in every labs/<lab>/problem.cpp.
#define LABKIT_PROBLEM(inputs_fn)                                                                       \
    (::labkit::Problem{lab_spec::kLabName, lab_spec::kCases, lab_spec::kBenchCases, lab_spec::kOutputs, \
                       lab_spec::bytes_moved, lab_spec::flops, (inputs_fn), lab_spec::items,           \
                       lab_spec::kItemsName, lab_spec::kTakesBlock})

}  // namespace labkit
