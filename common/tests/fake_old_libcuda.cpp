// A stand-in for the libcuda.so.1 of an NVIDIA driver that supports CUDA up to 12.2 (the
// R535 branch): just enough of the driver API for the CUDA runtime to ask its version and
// refuse it with cudaErrorInsufficientDriver, as it does under a real driver that old.
// Put first on LD_LIBRARY_PATH, it lets a test on any machine, with a GPU or without,
// see what a student with an old driver sees (tools/labtest.py driver-too-old).
#include <cstring>

namespace {
constexpr int kCudaVersionOfThisDriver = 12020;  // 1000 * major + 10 * minor
constexpr int kCudaSuccess = 0, kCudaErrorInvalidValue = 1, kCudaErrorNotFound = 500;
}  // namespace

extern "C" {

int cuDriverGetVersion(int* version) {
    if (!version) return kCudaErrorInvalidValue;
    *version = kCudaVersionOfThisDriver;
    return kCudaSuccess;
}

int cuInit(unsigned) { return kCudaSuccess; }

// The runtime finds every other entry point through this; only the version matters here.
int cuGetProcAddress_v2(const char* symbol, void** function, int, unsigned long long, int* status) {
    void* found = nullptr;
    if (symbol && std::strcmp(symbol, "cuDriverGetVersion") == 0) found = reinterpret_cast<void*>(&cuDriverGetVersion);
    if (symbol && std::strcmp(symbol, "cuInit") == 0) found = reinterpret_cast<void*>(&cuInit);
    if (symbol && std::strcmp(symbol, "cuGetProcAddress") == 0) found = reinterpret_cast<void*>(&cuGetProcAddress_v2);
    if (function) *function = found;
    if (status) *status = found ? 0 : 1;  // CU_GET_PROC_ADDRESS_SUCCESS / _SYMBOL_NOT_FOUND
    return found ? kCudaSuccess : kCudaErrorNotFound;
}

int cuGetProcAddress(const char* symbol, void** function, int version, unsigned long long flags) {
    return cuGetProcAddress_v2(symbol, function, version, flags, nullptr);
}

}  // extern "C"
