#include <cublas_v2.h>

#include "vector_add.hpp"

// c = a, then c = 1 * b + c with cuBLAS.
void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    cudaMemcpy(c, a, n * sizeof(float), cudaMemcpyDeviceToDevice);
    cublasHandle_t handle;
    cublasCreate(&handle);
    const float one = 1.0f;
    cublasSaxpy(handle, static_cast<int>(n), &one, b, 1, c, 1);
    cublasDestroy(handle);
}
