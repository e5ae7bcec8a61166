#include "labkit/npp.hpp"

#include <dlfcn.h>

#include "labkit/check.hpp"

namespace labkit {

namespace {

std::string& reason() {
    static std::string text;
    return text;
}

}  // namespace

struct NppLoader {
    static Npp* make() {
        // The NPP of this CUDA major version (libnppif.so.13 for CUDA 13.x).
        const std::string file = "libnppif.so." + std::to_string(CUDART_VERSION / 1000);
        void* library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!library) {
            const char* why = dlerror();
            reason() = "NPP (" + file + ") could not be loaded: " + (why ? why : "unknown reason") +
                       ". Runs of submissions in a lab that forbids NPP cannot load it; the ladder can.";
            return nullptr;
        }
        static Npp npp;
        npp.filter_sobel_horiz_8u =
            reinterpret_cast<Npp::FilterSobelHoriz8u>(dlsym(library, "nppiFilterSobelHoriz_8u_C1R_Ctx"));
        if (!npp.filter_sobel_horiz_8u) {
            reason() = std::string("NPP has no nppiFilterSobelHoriz_8u_C1R_Ctx (") + dlerror() + ")";
            return nullptr;
        }
        int device = 0;
        cudaDeviceProp prop{};
        LABKIT_CHECK(cudaGetDevice(&device));
        LABKIT_CHECK(cudaGetDeviceProperties(&prop, device));
        Npp::StreamContext& c = npp.context_;
        c.hStream = nullptr;  // the default stream, where the harness times everything
        c.nCudaDeviceId = device;
        c.nMultiProcessorCount = prop.multiProcessorCount;
        c.nMaxThreadsPerMultiProcessor = prop.maxThreadsPerMultiProcessor;
        c.nMaxThreadsPerBlock = prop.maxThreadsPerBlock;
        c.nSharedMemPerBlock = prop.sharedMemPerBlock;
        c.nCudaDevAttrComputeCapabilityMajor = prop.major;
        c.nCudaDevAttrComputeCapabilityMinor = prop.minor;
        c.nStreamFlags = 0;
        return &npp;
    }
};

Npp* Npp::load() {
    static Npp* loaded = NppLoader::make();
    return loaded;
}

const std::string& Npp::why_unavailable() { return reason(); }

void Npp::check(int status, const char* call) {
    if (status < 0) throw CudaError(std::string(call) + " failed with NPP status " + std::to_string(status));
}

}  // namespace labkit
