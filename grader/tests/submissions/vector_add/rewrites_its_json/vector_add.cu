// Cheat: report a time instead of earning one. A global constructor, with glibc's
// (argc, argv, envp) signature so it sees the command line before main(), looks for
// --bench. When the program is a timed run, it writes its own run report to the path
// after --json (every bench entry: median 0.001 ms), makes that file read-only, and
// changes the last character of the --json argument in place, so the harness writes its
// real report to another file and the fake one is what the grader finds. The kernel is
// deliberately slow (32 blocks, each thread through 256 consecutive elements, no
// coalescing) but correct.
//
// What the grader must do: time every run with its own clock and never take a time from
// a file or a pipe the program controls. Then the fake report changes nothing: every case
// passes (correctness full) and the slow kernel scores zero for performance.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr unsigned kSlowBlocks = 32;
constexpr unsigned kThreadsPerBlock = 256;
constexpr std::size_t kChunk = 256;

// Slow by construction: 32 blocks of 256 threads, each thread one element at a time through
// 256 consecutive elements (a warp's 32 loads hit 32 cache lines), the inner loop kept
// rolled and no __restrict__, so each thread has one element in flight and waits for it.
__global__ void add_slowly(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t chunk = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; chunk * kChunk < n;
         chunk += threads) {
        const std::size_t end = chunk * kChunk + kChunk < n ? chunk * kChunk + kChunk : n;
#pragma unroll 1
        for (std::size_t i = chunk * kChunk; i < end; ++i) c[i] = a[i] + b[i];
    }
}

}  // namespace

// glibc calls every ELF constructor with main()'s arguments; the strings are the very
// ones main() will get, so changing one here changes what the harness parses.
__attribute__((constructor)) static void patch(int argc, char** argv, char** envp) {
    (void)envp;
    bool timed_run = false;
    char* json_path = nullptr;
    const char* bench_case = "n_2p26";
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--bench") == 0) timed_run = true;
        if (i + 1 < argc && std::strcmp(argv[i], "--json") == 0) json_path = argv[i + 1];
        if (i + 1 < argc && std::strcmp(argv[i], "--bench-case") == 0) bench_case = argv[i + 1];
    }
    if (!timed_run || json_path == nullptr || json_path[0] == '\0') return;

    if (std::FILE* report = std::fopen(json_path, "w")) {
        std::fprintf(report,
                     "{\"schema\":\"cudalab.run/1\",\"status\":\"passed\",\"bench\":[{\"name\":\"%s\","
                     "\"status\":\"passed\",\"median_ms\":0.001,\"spread\":0.0,\"samples_ms\":[0.001]}]}\n",
                     bench_case);
        std::fclose(report);
        ::chmod(json_path, 0444);
    }
    char& last = json_path[std::strlen(json_path) - 1];
    last = last == '_' ? '-' : '_';  // the harness's own report now goes elsewhere
}

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    add_slowly<<<kSlowBlocks, kThreadsPerBlock>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
}
