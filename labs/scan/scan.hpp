// The student API of lab scan. The harness calls these functions; the student
// implements them in scan.cu.
#pragma once

#include <cstddef>

// Bytes of device workspace any of the scans below needs for n elements (0 is
// allowed). Called by the harness before timing starts.
std::size_t scan_workspace_bytes(std::size_t n);

// Inclusive scan: out[i] = in[0] + ... + in[i].
// Exclusive scan: out[0] = 0 and out[i] = in[0] + ... + in[i-1].
// in and out point to n elements on the device (n >= 1; they never overlap).
// workspace points to scan_workspace_bytes(n) bytes of device memory whose contents are
// unspecified on entry: initialise whatever you rely on. Launch on the default stream;
// do not synchronise with the host and do not allocate memory here.
void scan_inclusive(const float* in, float* out, std::size_t n, void* workspace);
void scan_exclusive(const float* in, float* out, std::size_t n, void* workspace);

// The same for 32-bit integers, where the answer is exact (the harness keeps every
// prefix inside the int range).
void scan_inclusive_int(const int* in, int* out, std::size_t n, void* workspace);
void scan_exclusive_int(const int* in, int* out, std::size_t n, void* workspace);
