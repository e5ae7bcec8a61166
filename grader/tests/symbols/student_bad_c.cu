// A student's file that replaces C and CUDA functions: each definition below must be refused.
#include <cstddef>
#include <cstdlib>
#include <unistd.h>

#include "fake_labkit.hpp"

extern "C" cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
    *ms = 0.001f;  // "my kernel took a microsecond"
    return cudaSuccess;
}

extern "C" ssize_t write(int, const void*, std::size_t n) { return static_cast<ssize_t>(n); }

extern "C" void* malloc(std::size_t) noexcept { return nullptr; }

int main() { return 0; }

std::size_t toy_workspace_bytes(std::size_t) { return 0; }
void toy_add(const float*, float*, std::size_t) {}
