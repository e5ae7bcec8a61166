// NPP as a library baseline (sobel's nppiFilterSobelHoriz_8u_C1R_Ctx), loaded at run time
// with dlopen instead of linked, for the same reason as cuBLAS (labkit/cublas.hpp): no lab
// binary depends on NPP, so runs of submissions in labs that forbid it find nothing to
// load, while the ladder and a student's own --bench time it. The few NPP types used are
// declared here, with the layout of the toolkit's nppdefs.h, so that building needs no
// NPP headers. Host code only.
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace labkit {

class Npp {
public:
    struct Size {
        int width;
        int height;
    };
    // nppdefs.h's NppStreamContext, field for field.
    struct StreamContext {
        cudaStream_t hStream;
        int nCudaDeviceId;
        int nMultiProcessorCount;
        int nMaxThreadsPerMultiProcessor;
        int nMaxThreadsPerBlock;
        std::size_t nSharedMemPerBlock;
        int nCudaDevAttrComputeCapabilityMajor;
        int nCudaDevAttrComputeCapabilityMinor;
        unsigned int nStreamFlags;
        int nReserved0;
    };
    using FilterSobelHoriz8u = int (*)(const unsigned char* src, int src_step, unsigned char* dst, int dst_step,
                                       Size roi, StreamContext context);

    // The process's NPP image-filtering library, loaded on the first call; nullptr when it
    // cannot be loaded, and then why_unavailable() says why.
    static Npp* load();
    static const std::string& why_unavailable();

    // The default stream's context on the current device.
    const StreamContext& context() const { return context_; }
    // Throws labkit::CudaError naming `call` when `status` is an NPP error (negative).
    static void check(int status, const char* call);

    FilterSobelHoriz8u filter_sobel_horiz_8u = nullptr;

private:
    Npp() = default;
    StreamContext context_{};
    friend struct NppLoader;
};

}  // namespace labkit
