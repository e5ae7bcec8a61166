#include "labkit/cublas.hpp"

#include <dlfcn.h>

#include "labkit/check.hpp"

namespace labkit {

namespace {

std::string& reason() {
    static std::string text;
    return text;
}

template <typename Fn>
bool resolve(void* library, const char* name, Fn& out) {
    out = reinterpret_cast<Fn>(dlsym(library, name));
    if (!out) reason() = std::string("cuBLAS has no ") + name + " (" + dlerror() + ")";
    return out != nullptr;
}

}  // namespace

struct CublasLoader {
    static Cublas* make() {
        const std::string file = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
        void* library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!library) {
            const char* why = dlerror();
            reason() = "cuBLAS (" + file + ") could not be loaded: " + (why ? why : "unknown reason") +
                       ". Runs of submissions in a lab that forbids cuBLAS cannot load it; the ladder can.";
            return nullptr;
        }
        static Cublas cublas;
        if (!resolve(library, "cublasCreate_v2", cublas.create_) ||
            !resolve(library, "cublasSetMathMode", cublas.set_math_mode_) ||
            !resolve(library, "cublasSgeam", cublas.sgeam) || !resolve(library, "cublasSgemm_v2", cublas.sgemm))
            return nullptr;
        const cublasStatus_t status = cublas.create_(&cublas.handle_);
        if (status != CUBLAS_STATUS_SUCCESS) {
            reason() = "cublasCreate failed with status " + std::to_string(static_cast<int>(status));
            return nullptr;
        }
        return &cublas;
    }
};

Cublas* Cublas::load() {
    static Cublas* loaded = CublasLoader::make();
    return loaded;
}

const std::string& Cublas::why_unavailable() { return reason(); }

void Cublas::use_pedantic_fp32() const { check(set_math_mode_(handle_, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode"); }

void Cublas::check(cublasStatus_t status, const char* call) {
    if (status != CUBLAS_STATUS_SUCCESS)
        throw CudaError(std::string(call) + " failed with cuBLAS status " + std::to_string(static_cast<int>(status)));
}

}  // namespace labkit
