// Lab matmul, GPU side: call the student's matmul on the harness's A and B, expose C.
// cuBLAS SGEMM in true FP32 (pedantic math: no TF32 tensor cores) is the library
// baseline timed beside it, loaded at run time through labkit::Cublas, so that runs of
// submissions, which may not use cuBLAS, never find it.
#include <memory>
#include <string>

#include "labkit/check.hpp"
#include "labkit/cublas.hpp"
#include "labkit/harness.hpp"
#include "matmul.hpp"
#include "problem.hpp"

namespace {

// cuBLAS with FP32 math that rounds like the students' code has to (CUDA cores, no
// TF32), set once for the process; nullptr where cuBLAS cannot be loaded. Loaded on
// first use, so a run that only checks cases never loads it.
labkit::Cublas* pedantic_cublas() {
    static labkit::Cublas* cublas = [] {
        labkit::Cublas* loaded = labkit::Cublas::load();
        if (loaded) loaded->use_pedantic_fp32();
        return loaded;
    }();
    return cublas;
}

// What cuBLAS may keep for itself besides the case's arrays: its workspace (32 MiB on
// Hopper, less elsewhere).
constexpr std::size_t kCublasWorkspaceBytes = std::size_t{32} << 20;

class MatmulRun final : public labkit::DeviceRun {
public:
    MatmulRun(const labkit::CaseSpec& spec, const std::vector<labkit::DeviceArray*>& inputs)
        : a_(*inputs.at(0)),
          b_(*inputs.at(1)),
          m_(static_cast<std::size_t>(spec.param("m"))),
          n_(static_cast<std::size_t>(spec.param("n"))),
          k_(static_cast<std::size_t>(spec.param("k"))),
          c_("c", labkit::DType::f32, {m_, n_}) {}

    // What the constructor allocates: C, m x n floats (cuBLAS's own workspace besides).
    static labkit::RunMemory memory(const labkit::CaseSpec& spec) {
        const auto m = static_cast<std::size_t>(spec.param("m"));
        const auto n = static_cast<std::size_t>(spec.param("n"));
        return {.outputs = m * n * sizeof(float), .library = kCublasWorkspaceBytes};
    }

    void run() override { matmul(a_.get<float>(), b_.get<float>(), c_.get<float>(), m_, n_, k_); }
    std::vector<labkit::DeviceArray*> outputs() override { return {&c_}; }

    const char* library_name() const override {
        return pedantic_cublas() ? "cuBLAS SGEMM (FP32, no tensor cores)" : nullptr;
    }
    std::string library_unavailable() const override {
        return pedantic_cublas() ? std::string() : labkit::Cublas::why_unavailable();
    }
    // cuBLAS is column-major, and a row-major matrix read column-major is its transpose.
    // So ask for C^T = B^T A^T: column-major n x m from B^T (n x k, leading dimension n)
    // and A^T (k x m, leading dimension k), which is C row-major, m x n.
    void run_library() override {
        const float alpha = 1.0f, beta = 0.0f;
        labkit::Cublas& cublas = *pedantic_cublas();
        labkit::Cublas::check(cublas.sgemm(cublas.handle(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n_),
                                           static_cast<int>(m_), static_cast<int>(k_), &alpha, b_.get<float>(),
                                           static_cast<int>(n_), a_.get<float>(), static_cast<int>(k_), &beta,
                                           c_.get<float>(), static_cast<int>(n_)),
                              "cublasSgemm");
    }

private:
    const labkit::DeviceArray &a_, &b_;
    std::size_t m_, n_, k_;
    labkit::DeviceArray c_;
};

}  // namespace

int main(int argc, char** argv) {
    return labkit::harness_main(
        argc, argv, lab_matmul::problem(),
        [](const labkit::CaseSpec& spec, const std::vector<labkit::DeviceArray*>& inputs) {
            return std::make_unique<MatmulRun>(spec, inputs);
        },
        &MatmulRun::memory);
}
