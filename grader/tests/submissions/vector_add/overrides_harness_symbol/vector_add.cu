// Attack: redefine a function of the harness library. vector_add is correct, but the file
// also defines labkit::summarise, the function that turns the harness's timing samples
// into the median and spread it reports (common/labkit/stats.hpp), so that every summary
// says 0.001 ms. The harness library is a static archive: when the linker finds the
// symbol already defined by the submission, it may never need stats.o, and then the
// forged summary is the one the harness calls.
//
// What the grader must do: refuse a submission that defines any symbol besides the lab's
// API (here one in namespace labkit), before it links, naming it. The grade is
// compile_error.
#include <span>

#include "labkit/check.hpp"
#include "labkit/stats.hpp"
#include "vector_add.hpp"

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i];
}

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t blocks = (n + 255) / 256;
    add<<<static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8), 256>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
}

// The same declaration as in stats.hpp, so this is a second definition, not an overload.
labkit::SampleSummary labkit::summarise(std::span<const double> samples) {
    (void)samples;
    SampleSummary tiny;
    tiny.median = tiny.min = tiny.max = tiny.q1 = tiny.q3 = 0.001;
    tiny.spread = 0.0;
    return tiny;
}
