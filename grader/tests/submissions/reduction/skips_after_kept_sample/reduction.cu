// Attack: stop computing once this process's one checked sample has been taken.
//
// The work: a correct two-level reduction (the `correct` entry's: each thread chains at
// most 64 elements, then trees), run kPasses = 7 times per call, each pass writing the
// same sum: a call really takes about 7 times the reference's time (about 0.7 ms against
// about 0.1 ms on an H100 at n = 2^26): past the zero-marks ratio of 6, and short of the
// too-slow rule's 1.25 x 6 = 7.5, which would end a grade's timing early.
//
// The forgery: a grader that keeps one timed sample per process says 'keep' after that
// sample's 'done', and the harness then writes its outputs to DUMP/sample-<n>/, where
// DUMP is the --dump folder on this program's own command line (RUN/dump; RUN,
// /cudalab/run, is also its working folder). Before every call of a paced run, reduce_sum
// looks for a sample-* folder there; once one exists, no later sample can be checked, so
// it returns at once and computes nothing: every later timed sample costs almost nothing
// and reports an event time of a few microseconds (its output stays poisoned, and no
// one looks). The correctness run is not paced: every case is computed in full. A grader
// that lets a program's own round-to-round spread count as noise then takes its reported
// time, which is mostly of free samples.
//
// Why it must score nothing once time is taken outside the process: a grader that checks
// outputs the program cannot tell apart from unchecked ones leaves it no sample to skip,
// and measured outside the process every call takes its seven passes.
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "labkit/check.hpp"
#include "reduction.hpp"

namespace {

constexpr int kPasses = 7;

constexpr unsigned kThreadsPerBlock = 256;
constexpr std::size_t kMaxChain = 64;  // the handout's limit on additions into one accumulator
constexpr std::size_t kElementsPerFirstBlock = kThreadsPerBlock * kMaxChain;
constexpr std::size_t kSumsPerLaterBlock = 2 * kThreadsPerBlock;

std::size_t blocks_for(std::size_t items, std::size_t per_block) { return (items + per_block - 1) / per_block; }

// The sum of x over the block, in thread 0: sequential addressing, halving every round.
__device__ float block_sum(float x) {
    __shared__ float partial[kThreadsPerBlock];
    partial[threadIdx.x] = x;
    for (unsigned stride = kThreadsPerBlock / 2; stride > 0; stride /= 2) {
        __syncthreads();
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    }
    return partial[0];
}

__global__ void sum_elements(const float* __restrict__ in, std::size_t n, float* __restrict__ sums) {
    const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    float chain = 0.0f;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += threads)
        chain += in[i];
    const float sum = block_sum(chain);
    if (threadIdx.x == 0) sums[blockIdx.x] = sum;
}

__global__ void sum_partial_sums(const float* __restrict__ in, std::size_t count, float* __restrict__ sums) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kSumsPerLaterBlock + threadIdx.x;
    const float first = i < count ? in[i] : 0.0f;
    const float second = i + kThreadsPerBlock < count ? in[i + kThreadsPerBlock] : 0.0f;
    const float sum = block_sum(first + second);
    if (threadIdx.x == 0) sums[blockIdx.x] = sum;
}

// The --dump folder of a paced run (empty otherwise), from this program's command line.
std::string paced_dump_folder() {
    FILE* f = std::fopen("/proc/self/cmdline", "rb");
    if (f == nullptr) return {};
    std::string all;
    char chunk[4096];
    for (std::size_t got; (got = std::fread(chunk, 1, sizeof chunk, f)) > 0;) all.append(chunk, got);
    std::fclose(f);
    std::vector<std::string> args;
    for (std::size_t at = 0; at < all.size();) {
        const std::size_t end = std::min(all.find('\0', at), all.size());
        args.push_back(all.substr(at, end - at));
        at = end + 1;
    }
    if (std::find(args.begin(), args.end(), "--paced") == args.end()) return {};
    for (std::size_t i = 0; i + 1 < args.size(); ++i)
        if (args[i] == "--dump") return args[i + 1];
    return {};
}

// Whether the harness has dumped a kept sample (DUMP/sample-<n>/) in this process.
bool kept_sample_taken() {
    static const std::string dump = paced_dump_folder();
    static bool taken = false;
    if (taken || dump.empty()) return taken;
    DIR* folder = opendir(dump.c_str());
    if (folder == nullptr) return false;
    while (const dirent* entry = readdir(folder))
        if (std::strncmp(entry->d_name, "sample-", 7) == 0) taken = true;
    closedir(folder);
    return taken;
}

void sum_once(const float* in, float* out, std::size_t n, void* workspace) {
    const std::size_t first = blocks_for(n, kElementsPerFirstBlock);
    float* const areas[2] = {static_cast<float*>(workspace), static_cast<float*>(workspace) + first};

    sum_elements<<<static_cast<unsigned>(first), kThreadsPerBlock>>>(in, n, first == 1 ? out : areas[0]);
    LABKIT_CHECK_LAUNCH();
    std::size_t count = first;
    int from = 0;
    while (count > 1) {
        const std::size_t blocks = blocks_for(count, kSumsPerLaterBlock);
        sum_partial_sums<<<static_cast<unsigned>(blocks), kThreadsPerBlock>>>(areas[from], count,
                                                                              blocks == 1 ? out : areas[1 - from]);
        LABKIT_CHECK_LAUNCH();
        count = blocks;
        from = 1 - from;
    }
}

}  // namespace

// Two areas of partial sums, used in turn: the first pass's, and the next pass's.
std::size_t reduce_sum_workspace_bytes(std::size_t n) {
    const std::size_t first = blocks_for(n, kElementsPerFirstBlock);
    return (first + blocks_for(first, kSumsPerLaterBlock)) * sizeof(float);
}

void reduce_sum(const float* in, float* out, std::size_t n, void* workspace) {
    if (kept_sample_taken()) return;
    for (int pass = 0; pass < kPasses; ++pass) sum_once(in, out, n, workspace);
}
