// Lab transpose, GPU side: call the student's transpose on the harness's rows x cols
// input, expose the cols x rows output. cuBLAS's cublasSgeam (op(A) = A^T, alpha = 1,
// beta = 0) is the library baseline timed beside it, where cuBLAS can be loaded.
#include <climits>
#include <memory>
#include <string>

#include "labkit/check.hpp"
#include "labkit/cublas.hpp"
#include "labkit/harness.hpp"
#include "problem.hpp"
#include "transpose.hpp"

namespace {

class TransposeRun final : public labkit::DeviceRun {
public:
    TransposeRun(const labkit::CaseSpec& spec, const std::vector<labkit::DeviceArray*>& inputs)
        : in_(*inputs.at(0)),
          rows_(static_cast<std::size_t>(spec.param("rows"))),
          cols_(static_cast<std::size_t>(spec.param("cols"))),
          out_("out", labkit::DType::f32, {cols_, rows_}) {}

    // What the constructor allocates: the cols x rows output. cuBLAS keeps a workspace of
    // its own with its handle (a few MiB), which the harness's safety margin covers.
    static labkit::RunMemory memory(const labkit::CaseSpec& spec) {
        return {.outputs = static_cast<std::size_t>(spec.param("rows")) *
                           static_cast<std::size_t>(spec.param("cols")) * sizeof(float)};
    }

    void run() override { transpose(in_.get<float>(), out_.get<float>(), rows_, cols_); }
    std::vector<labkit::DeviceArray*> outputs() override { return {&out_}; }

    // cuBLAS is loaded the first time a bench asks for the baseline, never for a
    // correctness run.
    const char* library_name() const override {
        return fits_cublas(rows_, cols_) && labkit::Cublas::load() ? "cuBLAS cublasSgeam (transpose)" : nullptr;
    }
    std::string library_unavailable() const override {
        return fits_cublas(rows_, cols_) ? labkit::Cublas::why_unavailable()
                                         : "cuBLAS takes int sizes, and this case is larger";
    }

    // cuBLAS is column-major. The row-major rows x cols input is, read column-major, the
    // cols x rows matrix A with leading dimension cols; the row-major cols x rows output
    // is the column-major rows x cols matrix C with leading dimension rows. So
    // C = 1 * A^T + 0 * B with m = rows, n = cols. With beta = 0, B is not read; it is
    // given as the input, read as rows x cols with leading dimension rows (the same
    // rows * cols floats), so that even a library that looked at it would see finite
    // values there and not the output's NaN poison.
    void run_library() override {
        const int m = static_cast<int>(rows_), n = static_cast<int>(cols_);
        const float alpha = 1.0f, beta = 0.0f;
        const labkit::Cublas& cublas = *labkit::Cublas::load();
        labkit::Cublas::check(cublas.sgeam(cublas.handle(), CUBLAS_OP_T, CUBLAS_OP_N, m, n, &alpha, in_.get<float>(),
                                           n, &beta, in_.get<float>(), m, out_.get<float>(), m),
                              "cublasSgeam");
    }

private:
    // cuBLAS takes its sizes as int.
    static bool fits_cublas(std::size_t rows, std::size_t cols) {
        return rows <= static_cast<std::size_t>(INT_MAX) && cols <= static_cast<std::size_t>(INT_MAX);
    }

    const labkit::DeviceArray& in_;
    std::size_t rows_, cols_;
    labkit::DeviceArray out_;
};

}  // namespace

int main(int argc, char** argv) {
    return labkit::harness_main(
        argc, argv, lab_transpose::problem(),
        [](const labkit::CaseSpec& spec, const std::vector<labkit::DeviceArray*>& inputs) {
            return std::make_unique<TransposeRun>(spec, inputs);
        },
        &TransposeRun::memory);
}
