// Cheat: report a time instead of earning one. The reduction is ../slow's (correct, and
// deliberately slow); on top of it a global constructor, with glibc's (argc, argv, envp)
// signature so it sees the command line before main(), looks for --bench. When the
// program is a timed run, it writes its own run report to the path after --json (the
// bench case: median 0.001 ms), makes that file read-only, and changes the last character
// of the --json argument in place, so the harness writes its real report to another file
// and the fake one is what the grader finds.
//
// What the grader must do: time every run with its own clock and never take a time from
// a file or a pipe the program controls. Then the fake report changes nothing: every case
// passes (correctness full) and the slow reduction scores zero for performance, exactly
// as ../slow does.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>

#include "labkit/check.hpp"
#include "reduction.hpp"

namespace {

constexpr unsigned kSlowBlocks = 16;
constexpr unsigned kThreadsPerBlock = 256;
constexpr std::size_t kRun = 64;  // the handout's limit on additions into one accumulator

std::size_t halves(std::size_t count) { return (count + 1) / 2; }

__global__ void sum_runs_slowly(const float* in, std::size_t n, float* sums) {
    const std::size_t runs = (n + kRun - 1) / kRun;
    const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t run = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; run < runs;
         run += threads) {
        const std::size_t end = (run + 1) * kRun < n ? (run + 1) * kRun : n;
        float chain = 0.0f;
#pragma unroll 1
        for (std::size_t i = run * kRun; i < end; ++i) chain += in[i];
        sums[run] = chain;
    }
}

// One level of a tree: sums[k] = in[2k] + in[2k + 1] (a lone last value is carried over).
__global__ void add_pairs(const float* in, std::size_t count, float* sums) {
    const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; 2 * k < count;
         k += threads)
        sums[k] = 2 * k + 1 < count ? in[2 * k] + in[2 * k + 1] : in[2 * k];
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

// Two areas used in turn: the runs' sums, then half as many.
std::size_t reduce_sum_workspace_bytes(std::size_t n) {
    const std::size_t runs = (n + kRun - 1) / kRun;
    return (runs + halves(runs)) * sizeof(float);
}

void reduce_sum(const float* in, float* out, std::size_t n, void* workspace) {
    const std::size_t runs = (n + kRun - 1) / kRun;
    float* const areas[2] = {static_cast<float*>(workspace), static_cast<float*>(workspace) + runs};

    sum_runs_slowly<<<kSlowBlocks, kThreadsPerBlock>>>(in, n, runs == 1 ? out : areas[0]);
    LABKIT_CHECK_LAUNCH();
    std::size_t count = runs;
    int from = 0;
    while (count > 1) {
        const std::size_t next = halves(count);
        add_pairs<<<kSlowBlocks, kThreadsPerBlock>>>(areas[from], count, next == 1 ? out : areas[1 - from]);
        LABKIT_CHECK_LAUNCH();
        count = next;
        from = 1 - from;
    }
}
