// The student API of lab reduction. The harness calls these functions; the student
// implements them in reduction.cu.
#pragma once

#include <cstddef>

// Bytes of device workspace reduce_sum needs for n elements (0 is allowed). Called by
// the harness before timing starts, so allocation is never part of the measured time.
std::size_t reduce_sum_workspace_bytes(std::size_t n);

// *out = in[0] + in[1] + ... + in[n-1], as a float.
// in points to n floats on the device (n >= 1); out points to one float on the device.
// workspace points to reduce_sum_workspace_bytes(n) bytes of device memory whose
// contents are unspecified on entry (the harness fills them with garbage on purpose):
// initialise whatever you rely on. Launch on the default stream; do not synchronise
// with the host and do not allocate memory here.
void reduce_sum(const float* in, float* out, std::size_t n, void* workspace);
