// The product through cuSPARSE: A (dense, m x k) converted to CSR with DenseToSparse, then
// C = A * B with SpMM on row-major dense B and C. cuSPARSE is on no list of this lab's
// forbidden libraries, and its header gives the types and enums. The submission is not
// linked with cuSPARSE, so the functions come from dlopen/dlsym, typed from the header.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include <cusparse.h>

#include "matmul.hpp"

namespace {

#define SPARSE_FUNCTIONS(X)                                                                                     \
    X(cusparseCreate) X(cusparseCreateDnMat) X(cusparseCreateCsr) X(cusparseDenseToSparse_bufferSize)           \
    X(cusparseDenseToSparse_analysis) X(cusparseDenseToSparse_convert) X(cusparseSpMatGetSize)                  \
    X(cusparseCsrSetPointers) X(cusparseSpMM_bufferSize) X(cusparseSpMM) X(cusparseDestroySpMat)                \
    X(cusparseDestroyDnMat)

struct Sparse {
#define MEMBER(name) decltype(&::name) name = nullptr;
    SPARSE_FUNCTIONS(MEMBER)
#undef MEMBER
    cusparseHandle_t handle = nullptr;
    bool ok = false;
};

const Sparse& sparse() {
    static const Sparse loaded = [] {
        Sparse s;
        const std::string file = "libcusparse.so." + std::to_string(CUSPARSE_VER_MAJOR);
        void* library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (library == nullptr) {
            std::fprintf(stderr, "could not load %s\n", file.c_str());
            return s;
        }
#define RESOLVE(name) s.name = reinterpret_cast<decltype(&::name)>(dlsym(library, #name));
        SPARSE_FUNCTIONS(RESOLVE)
#undef RESOLVE
        s.ok = s.cusparseCreate(&s.handle) == CUSPARSE_STATUS_SUCCESS;
        return s;
    }();
    return loaded;
}

}  // namespace

void matmul(const float* a, const float* b, float* c, std::size_t m, std::size_t n, std::size_t k) {
    const Sparse& s = sparse();
    if (!s.ok) return;
    const auto rows = static_cast<std::int64_t>(m), cols = static_cast<std::int64_t>(n),
               inner = static_cast<std::int64_t>(k);
    cusparseDnMatDescr_t dense_a, dense_b, dense_c;
    s.cusparseCreateDnMat(&dense_a, rows, inner, inner, const_cast<float*>(a), CUDA_R_32F, CUSPARSE_ORDER_ROW);
    s.cusparseCreateDnMat(&dense_b, inner, cols, cols, const_cast<float*>(b), CUDA_R_32F, CUSPARSE_ORDER_ROW);
    s.cusparseCreateDnMat(&dense_c, rows, cols, cols, c, CUDA_R_32F, CUSPARSE_ORDER_ROW);

    // A as CSR: the row offsets first, then the columns and values once nnz is known.
    int* offsets = nullptr;
    cudaMalloc(&offsets, (m + 1) * sizeof(int));
    cusparseSpMatDescr_t csr_a;
    s.cusparseCreateCsr(&csr_a, rows, inner, 0, offsets, nullptr, nullptr, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                        CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
    std::size_t bytes = 0;
    s.cusparseDenseToSparse_bufferSize(s.handle, dense_a, csr_a, CUSPARSE_DENSETOSPARSE_ALG_DEFAULT, &bytes);
    void* buffer = nullptr;
    cudaMalloc(&buffer, bytes > 0 ? bytes : 1);
    s.cusparseDenseToSparse_analysis(s.handle, dense_a, csr_a, CUSPARSE_DENSETOSPARSE_ALG_DEFAULT, buffer);
    std::int64_t r = 0, cl = 0, nnz = 0;
    s.cusparseSpMatGetSize(csr_a, &r, &cl, &nnz);
    int* columns = nullptr;
    float* values = nullptr;
    cudaMalloc(&columns, (nnz > 0 ? nnz : 1) * sizeof(int));
    cudaMalloc(&values, (nnz > 0 ? nnz : 1) * sizeof(float));
    s.cusparseCsrSetPointers(csr_a, offsets, columns, values);
    s.cusparseDenseToSparse_convert(s.handle, dense_a, csr_a, CUSPARSE_DENSETOSPARSE_ALG_DEFAULT, buffer);

    // C = 1 * A * B + 0 * C
    const float one = 1.0f, zero = 0.0f;
    std::size_t spmm_bytes = 0;
    s.cusparseSpMM_bufferSize(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                              csr_a, dense_b, &zero, dense_c, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &spmm_bytes);
    void* spmm_buffer = nullptr;
    cudaMalloc(&spmm_buffer, spmm_bytes > 0 ? spmm_bytes : 1);
    s.cusparseSpMM(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, csr_a,
                   dense_b, &zero, dense_c, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, spmm_buffer);

    s.cusparseDestroySpMat(csr_a);
    s.cusparseDestroyDnMat(dense_a);
    s.cusparseDestroyDnMat(dense_b);
    s.cusparseDestroyDnMat(dense_c);
    cudaFree(spmm_buffer);
    cudaFree(values);
    cudaFree(columns);
    cudaFree(buffer);
    cudaFree(offsets);
}
