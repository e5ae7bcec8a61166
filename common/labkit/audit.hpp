// The grader's auditor: the official process that owns a timed case's inputs and outputs
// while the grader times a program (docs/architecture.md, "Paced timing").
//
// The program under test runs in a process of its own, which is the student's: its memory,
// its threads, its pipes and the harness code linked into it. So the auditor, not the
// program, does everything a timed sample's honesty depends on. For each sample it fills
// the inputs from a seed that only it and the grader know, poisons the outputs and makes
// the L2 cold; tells the program "go N" and waits for "done N MS" (through the signal page the
// grader shared between them, or as lines on its pipes); then copies the outputs
// away (the seal). The grader's clock runs from asking the auditor for the sample to the
// seal's end, so all the program's GPU work falls inside it: the GPU runs one process's
// work at a time, and the seal cannot start before the program's work has left the GPU.
// After the clock has stopped, the auditor verifies the sealed sample: the inputs must be
// the ones it wrote, and the outputs must match what the course's reference computes on
// them (bit for bit where the lab's answer is exact; for float outputs, finite where the
// reference's are and close to them on the whole). It may keep any sealed sample for the
// trusted checker; every sample is sealed and verified the same way, so the program cannot
// tell which were kept, or when.
#pragma once

#include <cstdint>
#include <string>

#include "labkit/device.hpp"
#include "labkit/harness.hpp"
#include "labkit/problem.hpp"
#include "labkit/report.hpp"

namespace labkit {

struct AuditOptions {
    int control = -1;      // --control FD: the Unix socket to the grader
    std::string dump_dir;  // --dump DIR: kept samples go to DIR/<name>/
    int slots = 2;         // --slots K: sealed samples that can be kept for the checker at once
};

// Serves the grader until it says "end"; fills `json` (the auditor's run JSON) and
// returns the exit code. A grader that breaks the protocol is a UsageError.
int run_auditor(const Problem& problem, const MakeDeviceRun& make_run, const CaseSpec& spec, const DeviceInfo& device,
                const AuditOptions& options, Json& json);

// ---- the verification's comparisons, on the GPU (tests use them too) ---------------------

struct Difference {
    std::uint64_t count = 0;  // elements that differ
    std::uint64_t first = 0;  // the first of them (meaningless when count is 0)
};

// Elements of `element_bytes` bytes each that differ bit for bit between two device arrays
// of `bytes` bytes.
Difference count_unequal(const void* a, const void* b, std::size_t bytes, std::size_t element_bytes);

// How a float output compares with the reference's, element by element.
struct FloatScreen {
    Difference non_finite;       // not a finite number where the reference's element is
    double rms_difference = 0;   // over the elements both have finite
    double rms_reference = 0;
    double relative() const { return rms_reference > 0 ? rms_difference / rms_reference : rms_difference; }
};
FloatScreen screen_floats(const float* got, const float* reference, std::size_t n);

// The first element where |got - reference| exceeds `limit` (n when none).
std::uint64_t first_beyond(const float* got, const float* reference, std::size_t n, double limit);

// The verification's limit for float outputs of at least kScreenMinElements elements: the
// RMS of the difference from the reference, over the RMS of the reference. Honest float32
// code is far inside it (docs/architecture.md, "Trust"); skipped, stale, partial or made-up
// outputs are far outside.
inline constexpr double kScreenRelativeRms = 0.25;
inline constexpr std::uint64_t kScreenMinElements = 1024;

}  // namespace labkit
