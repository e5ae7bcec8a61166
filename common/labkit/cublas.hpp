// cuBLAS as a library baseline (transpose's cublasSgeam, matmul's cublasSgemm), loaded at
// run time with dlopen instead of linked. No lab binary links cuBLAS, so the grader can
// keep the library out of the runs of submissions in labs that forbid it (a run of
// student code finds nothing to load), while the ladder and a student's own --bench,
// where it can be loaded, time it beside the student's code. Host code only; the
// harness's DeviceRun calls these in run_library() and names the baseline with
// library_name() only when load() succeeded.
#pragma once

#include <string>

#include <cublas_v2.h>

namespace labkit {

class Cublas {
public:
    // The process's cuBLAS, loaded and given a handle on the default stream on the first
    // call; nullptr when it cannot be loaded, and then why_unavailable() says why.
    static Cublas* load();
    static const std::string& why_unavailable();

    cublasHandle_t handle() const { return handle_; }
    // Pedantic FP32: no TF32 tensor cores, no reduced precision, so SGEMM is timed in
    // the arithmetic the lab asks students to write.
    void use_pedantic_fp32() const;
    // Throws labkit::CudaError naming `call` when `status` is not success.
    static void check(cublasStatus_t status, const char* call);

    decltype(&cublasSgeam) sgeam = nullptr;
    decltype(&cublasSgemm_v2) sgemm = nullptr;

private:
    Cublas() = default;
    decltype(&cublasCreate_v2) create_ = nullptr;
    decltype(&cublasSetMathMode) set_math_mode_ = nullptr;
    cublasHandle_t handle_ = nullptr;
    friend struct CublasLoader;
};

}  // namespace labkit
