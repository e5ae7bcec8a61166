// Attack: take all the GPU's memory before the harness can. A global constructor (it runs
// before main) calls cudaMalloc in 1 GiB chunks until it fails, then in halves of that
// down to 256 bytes, so not even a tiny allocation fits afterwards, and never frees any of
// it. vector_add itself is correct.
//
// What the grader must do: report the harness's own out-of-memory failure as what it is,
// a CUDA error of this program (exit code for CUDA errors, every case failed), and make
// sure the memory comes back when the process ends, so that the submission graded next is
// unaffected (the suite checks that too). GPU memory dies with the process; a grader that
// shares one GPU between runs at the same time would need more than that.
#include <cstdio>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr std::size_t kFirstChunkBytes = std::size_t{1} << 30;
constexpr std::size_t kSmallestChunkBytes = 256;
constexpr int kMaxChunks = 1 << 16;

void* hoard[kMaxChunks];  // zero-initialised before any constructor runs

int hoard_gpu_memory() {
    int chunks = 0;
    std::size_t hoarded_bytes = 0;
    std::size_t chunk_bytes = kFirstChunkBytes;
    while (chunk_bytes >= kSmallestChunkBytes && chunks < kMaxChunks) {
        if (cudaMalloc(&hoard[chunks], chunk_bytes) == cudaSuccess) {
            hoarded_bytes += chunk_bytes;
            ++chunks;
        } else {
            (void)cudaGetLastError();  // out of memory is not sticky
            chunk_bytes /= 2;
        }
    }
    std::fprintf(stderr, "gpu_memory_hog: holding %zu MiB of GPU memory in %d allocations\n", hoarded_bytes >> 20,
                 chunks);
    return chunks;
}

// A global constructor in C++ terms: runs before main().
const int hoarded_chunks = hoard_gpu_memory();

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i];
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    (void)hoarded_chunks;
    const std::size_t blocks = (n + 255) / 256;
    add<<<static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8), 256>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
}
