// Attack: use all the host memory it can. On its first call it allocates host memory in
// 1 GiB chunks and touches every page (memset), up to 48 GiB in all, reporting its
// progress on stderr; if it gets that far, it frees everything and computes correctly.
//
// What the grader must do: cap a run's memory (the sandbox's cgroup memory.max = 16 GiB,
// with swap capped too, or the hog merely swaps). At the cap the kernel's OOM killer
// ends the program with SIGKILL, the grader reports the run as crashed in words that
// mention memory, and every case fails because nothing was dumped. The machine and the
// grader's own processes are never short of memory.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr std::size_t kGiB = std::size_t{1} << 30;
constexpr int kMaxChunks = 48;

// memset to memory that is freed unread could be optimised away; the empty asm with a
// memory clobber tells the compiler the bytes are used.
void touch(void* chunk) {
    std::memset(chunk, 0x5A, kGiB);
    asm volatile("" : : "r"(chunk) : "memory");
}

void hog_host_memory() {
    std::vector<void*> chunks;
    for (int i = 0; i < kMaxChunks; ++i) {
        void* chunk = std::malloc(kGiB);
        if (chunk == nullptr) {
            std::fprintf(stderr, "host_memory_hog: malloc refused chunk %d\n", i + 1);
            break;
        }
        touch(chunk);
        chunks.push_back(chunk);
        if (chunks.size() % 4 == 0) std::fprintf(stderr, "host_memory_hog: %zu GiB touched\n", chunks.size());
    }
    std::fprintf(stderr, "host_memory_hog: survived holding %zu GiB; freeing it\n", chunks.size());
    for (void* chunk : chunks) std::free(chunk);
}

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i];
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    static const bool hogged = (hog_host_memory(), true);
    (void)hogged;
    const std::size_t blocks = (n + 255) / 256;
    add<<<static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8), 256>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
}
