// The student API of lab transpose. The harness calls this function; the student
// implements it in transpose.cu.
#pragma once

#include <cstddef>

// out[c][r] = in[r][c] for every row r < rows and column c < cols.
// in points to a rows x cols matrix of floats on the device, row-major (element (r, c) at
// in[r * cols + c]); out points to cols x rows floats on the device, row-major (element
// (c, r) at out[c * rows + r]). rows and cols are at least 1, and any size, not only
// multiples of a tile. Launch on the default stream; do not synchronise with the host
// and do not allocate memory here.
void transpose(const float* in, float* out, std::size_t rows, std::size_t cols);
