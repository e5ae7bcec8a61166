// Comparing an output with its expected values, element by element, within a stated
// tolerance. NaN and Inf never pass by accident: a NaN passes only where NaN was
// expected, an infinity only where the same infinity was expected. The report says in
// words where the output first went wrong, how many elements differ, and the worst one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "labkit/host_array.hpp"
#include "labkit/lab_spec_types.hpp"

namespace labkit {

// What the reference says an output must be. `values` are exact or float64 results.
// `allowed_abs`, when not empty, gives each element its own absolute bound (labs whose
// tolerance follows from the data, e.g. a sum's rounding bound) and replaces abs/rel.
//
// `near_miss_abs`, when not empty, gives each element the error a plausible but
// longer-than-allowed order of float operations could reach (a sum chained through
// atomicAdd, say). A mismatch within it is a near miss: the message then says by how much
// the element is off against both bounds and ends with `near_miss_advice`, in which
// "{near}" stands for that element's near-miss bound. Beyond it, the plain message.
struct Expected {
    std::string name;
    std::vector<std::uint64_t> shape;
    std::vector<double> values;
    std::vector<double> allowed_abs;
    std::vector<double> near_miss_abs = {};
    std::string near_miss_advice = {};
    // The lab's contract fixes the order of the additions (a tree: a reduction), so a
    // correct answer is the same on every run; false where the contract itself allows an
    // order that follows timing (a scan's decoupled look-back).
    bool fixed_order = false;
    // When not empty, the reference computed only these elements (flat indices into
    // `shape`, ascending), too costly to compute in full (an 8192^3 matmul's every dot
    // product): `values`, `allowed_abs` and `near_miss_abs` hold one entry per index here,
    // and only these are compared. Empty: every element, in order.
    std::vector<std::uint64_t> only = {};
    // When set, called with the output and the flat index of its first mismatch: a clause
    // the lab adds to the message, saying what the mismatch means there (where a sort's
    // order or its stability first breaks, say). The reference's own knowledge of the
    // inputs goes in its captures.
    std::function<std::string(const HostArray& got, std::uint64_t index)> explain = {};
    // When above 0, the output is also judged as a whole, after every element has passed
    // its bound: the root mean square, over the compared elements, of each element's
    // error as a fraction of its allowed_abs must not exceed `rms_limit`. A worst-case
    // bound holds for every order of the arithmetic and is far looser than what the
    // arithmetic typically gives, so an output computed in a lower precision than the lab
    // asks for (its inputs rounded to fewer bits) can stay inside every element's bound
    // while its errors are, taken together, many times what the lab's precision gives
    // (labkit/matmul_reference.hpp derives such a limit). `rms_explain`, called with the
    // measured root mean square and the limit, gives the message when the test fails.
    double rms_limit = 0.0;
    std::function<std::string(double rms, double limit)> rms_explain = {};
};

struct Mismatch {
    std::uint64_t index = 0;
    double expected = 0.0;
    double got = 0.0;
    double allowed = 0.0;
};

struct CompareReport {
    std::string output;
    bool passed = true;
    std::uint64_t checked = 0;
    std::uint64_t mismatches = 0;
    std::optional<Mismatch> first;
    std::optional<Mismatch> worst;  // the largest error relative to its allowance
    bool near_miss = false;         // the first mismatch lies within its near-miss bound
    // The whole-output test (Expected::rms_limit): the root mean square of each compared
    // element's error as a fraction of its allowance, and its limit. rms_error is absent
    // where the reference sets no limit; rms_failed says the output failed this test
    // alone (every element within its bound).
    std::optional<double> rms_error;
    double rms_limit = 0.0;
    bool rms_failed = false;
    std::string message;            // one sentence a student can act on
};

// Distance in units in the last place between two finite floats of the same type
// (+0 and -0 are 0 apart; denormals count like any other step).
std::uint64_t ulp_distance(float a, float b);
std::uint64_t ulp_distance(double a, double b);

// Compares `got` (any dtype) with `expected` under `tolerance`. A shape or size
// mismatch is a failed report, never an exception.
CompareReport compare_within_tolerance(const Expected& expected, const HostArray& got,
                                       const Tolerance& tolerance);

// "c[12]" for vectors, "out[y=3, x=5]" for rank 2, "out[1, 2, 3]" above.
std::string describe_index(const std::string& name, const std::vector<std::uint64_t>& shape,
                           std::uint64_t flat_index);

// `expected.near_miss_advice` for element i: "{near}" replaced by that element's
// near-miss bound (left as it is where the reference gives no bounds).
std::string near_miss_advice_at(const Expected& expected, std::uint64_t i);

// Element i of an array of any dtype, as a double.
double element_value(const HostArray& array, std::uint64_t i);

// A number as a student should read it: shortest round-trip form, "NaN", "+Inf".
std::string format_value(double value);

}  // namespace labkit
