// Exit codes of every lab binary and checker. Each means one thing, so that the grader
// never mistakes "could not run here" for "the student's code is wrong". Mirrored in
// grader/cudalab/exit_codes.py; a test keeps the two equal.
#pragma once

namespace labkit {

inline constexpr int kExitPassed = 0;     // every case ran (a lab binary), or every case passed (a checker)
inline constexpr int kExitFailed = 1;     // some output was wrong
inline constexpr int kExitUsage = 2;      // bad command line or bad input file
inline constexpr int kExitCudaError = 3;  // a CUDA call or kernel launch failed
inline constexpr int kExitNoDevice = 4;   // no CUDA device here: nothing ran (waived)
inline constexpr int kExitTimeout = 5;    // set by the grader when it killed the process
inline constexpr int kExitInternal = 6;   // the harness or checker could not do its job

}  // namespace labkit
