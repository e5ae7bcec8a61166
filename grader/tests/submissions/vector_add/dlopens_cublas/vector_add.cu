// cuBLAS loaded by name at run time, its names split across string literals so that
// no line of the source says cublas; the compiled object holds the joined strings.
#include <dlfcn.h>

#include "vector_add.hpp"

using Create = int (*)(void**);
using Axpy = int (*)(void*, int, const float*, const float*, int, float*, int);

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    void* library = dlopen("libcu" "blas.so.13", RTLD_NOW);
    if (library == nullptr) return;
    auto create = reinterpret_cast<Create>(dlsym(library, "cu" "blasCreate_v2"));
    auto axpy = reinterpret_cast<Axpy>(dlsym(library, "cu" "blasSaxpy_v2"));
    void* handle = nullptr;
    create(&handle);
    cudaMemcpy(c, a, n * sizeof(float), cudaMemcpyDeviceToDevice);
    const float one = 1.0f;
    axpy(handle, static_cast<int>(n), &one, b, 1, c, 1);
}
