// A stand-in for labkit and a lab's harness, for tests/test_symbols.py only: small enough
// to compile in a second, with one of each kind of symbol the real official objects hold.
#pragma once

#include <cstddef>
#include <vector>

// The toy lab's API: the fake harness calls these, the student's file defines them.
void toy_add(const float* a, float* out, std::size_t n);
std::size_t toy_workspace_bytes(std::size_t n);

namespace labkit {

// Strong definitions in fake_labkit.cu.
double summarise(const std::vector<float>& values);
const char* describe();
__global__ void fill(float* out, std::size_t n);

// Inline, so every object that uses it emits a weak copy; `used` keeps the copy even
// where every call is inlined, as a bigger function would be kept.
[[gnu::used]] inline int count_positive(const std::vector<float>& values) {
    int count = 0;
    for (float v : values) count += v > 0.0f;
    return count;
}

// A static local of an inline function: a GNU unique symbol (nm type 'u').
inline int& calls() {
    static int count = 0;
    return count;
}

}  // namespace labkit
