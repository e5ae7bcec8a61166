// The library baselines' loaders as a submission's program has them: they load nothing.
// The cuBLAS and NPP baselines (labkit/cublas.cpp, labkit/npp.cpp) are linked into the
// official binaries only (the solution and the ladder, common/CMakeLists.txt), so that no
// code in a submission's program can open those libraries for the student; a submission's
// --bench shows the baseline as unavailable, with this reason, and the ladder times it.
#include <string>

#include "labkit/check.hpp"
#include "labkit/cublas.hpp"
#include "labkit/npp.hpp"

namespace labkit {

namespace {

std::string official_only(const char* library) {
    return std::string("the ") + library +
           " baseline is timed by the official binaries only (cudalab ladder), never inside a submission's program";
}

}  // namespace

Cublas* Cublas::load() { return nullptr; }
const std::string& Cublas::why_unavailable() {
    static const std::string why = official_only("cuBLAS");
    return why;
}
void Cublas::use_pedantic_fp32() const {}
void Cublas::check(cublasStatus_t, const char* call) {
    throw CudaError(std::string(call) + ": " + official_only("cuBLAS"));
}

Npp* Npp::load() { return nullptr; }
const std::string& Npp::why_unavailable() {
    static const std::string why = official_only("NPP");
    return why;
}
void Npp::check(int, const char* call) { throw CudaError(std::string(call) + ": " + official_only("NPP")); }

}  // namespace labkit
