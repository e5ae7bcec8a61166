// A student's file that replaces C++ and official functions: each of the six definitions
// marked below must be refused; everything else in it is allowed.
#include <cstdlib>

#include "fake_labkit.hpp"

// 1. A strong definition of a function labkit defines.
double labkit::summarise(const std::vector<float>&) { return 1.0; }

// 2. A weak definition of a function labkit defines strong.
[[gnu::weak]] const char* labkit::describe() { return "mine"; }

// 3. An inline function, kept in the object, with the name of a harness function.
[[gnu::used]] inline const char* harness_banner() { return "mine"; }

// 4. A strong definition of an inline labkit function (the official copy is weak).
namespace labkit::detail {
void check_cuda(cudaError_t, const char*, const char*, int) {}
}

// 5. The C++ library's operator new.
void* operator new(std::size_t bytes) { return std::malloc(bytes); }

// 6. A kernel labkit defines: one sentence, not a second one for nvcc's host stub.
__global__ void labkit::fill(float*, std::size_t) {}

std::size_t toy_workspace_bytes(std::size_t) { return 0; }
void toy_add(const float*, float*, std::size_t) {}
