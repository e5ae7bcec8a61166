// Attack: rewrite the CUDA runtime's event timer in memory, at start, so that it reports
// a small time and stalls the samples that did not run the code under test.
//
// The work: vector_add is correct, but every call adds the whole array kPasses = 6 times
// (each pass writes the same right answer), so a call really takes about 6 times the
// reference's time (1.6 ms against about 0.27 ms on an H100 at n = 2^26): twice the
// zero-marks ratio of 3.
//
// The forgery: the CUDA runtime is linked statically, so cudaEventElapsedTime (the name
// the harness calls in CUDA 13's cuda_runtime_api.h: no versioned alias) is code in this
// program's own text. Before main, in a paced run (--paced on /proc/self/cmdline), an ELF
// constructor makes the page(s) holding its first 12 bytes writable (mprotect) and writes
// over them `movabs rax, <address of elapsed_instead>; jmp rax` (48 B8 imm64, FF E0), then
// makes them read-only again. Every call of the harness's timer now lands in
// elapsed_instead, with the same arguments and the harness's return address:
//   * after a sample in which vector_add ran (a timed or warm-up sample), it answers the
//     time from vector_add's start to now, on the host's clock (the region has finished:
//     the harness synchronised on its stop event), divided by 2 * kPasses: about half the
//     reference's time;
//   * after a sample in which vector_add did not run (a blank: no call of the API since
//     the last sample), it first waits 1.5 times the longest of the last 32 such times,
//     plus 0.2 ms, so the blank sample's 'done' reaches the grader that much later.
// The correctness run never calls the timer and is not patched; the object defines no
// runtime symbol (the symbol check allows it), it only changes code at run time.
//
// Why it scores with a grader that trusts the program's own timing: the grader's time
// per call is median(timed) - median(blank) on its clock, and every blank now takes
// longer than a timed sample, so the difference is below zero and counts as 0 ms. The
// cross-check finds no disagreement and scores the reported event median, about half the
// reference's time: full speed points. The kept timed sample is computed in full before
// its hashes are taken, so the checker passes it.
//
// Why it scores nothing once time is taken outside the process: a clock outside the
// program cannot be patched, and blank samples it cannot tell apart cannot be stalled;
// it sees six passes over the data per call, about 6 times the reference.
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr int kPasses = 6;

// --- the work: the course's float4 kernel, kPasses times per call ----------------------

constexpr int kThreadsPerBlock = 256;
constexpr int kGroupsPerThread = 2;

__global__ void add_groups(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ c,
                           std::size_t groups) {
    const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x * kGroupsPerThread + threadIdx.x;
    float4 x[kGroupsPerThread], y[kGroupsPerThread];
#pragma unroll
    for (int k = 0; k < kGroupsPerThread; ++k) {
        const std::size_t g = first + static_cast<std::size_t>(k) * blockDim.x;
        if (g < groups) {
            x[k] = a[g];
            y[k] = b[g];
        }
    }
#pragma unroll
    for (int k = 0; k < kGroupsPerThread; ++k) {
        const std::size_t g = first + static_cast<std::size_t>(k) * blockDim.x;
        if (g < groups) c[g] = make_float4(x[k].x + y[k].x, x[k].y + y[k].y, x[k].z + y[k].z, x[k].w + y[k].w);
    }
}

__global__ void add_scalars(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                            std::size_t begin, std::size_t n) {
    const std::size_t i = begin + static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

unsigned blocks_for(std::size_t items, std::size_t per_block) {
    return static_cast<unsigned>((items + per_block - 1) / per_block);
}

void add_once(const float* a, const float* b, float* c, std::size_t n) {
    std::size_t scalar_begin = 0;
    if (aligned16(a) && aligned16(b) && aligned16(c)) {
        const std::size_t groups = n / 4;
        if (groups > 0) {
            add_groups<<<blocks_for(groups, std::size_t{kThreadsPerBlock} * kGroupsPerThread), kThreadsPerBlock>>>(
                reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b), reinterpret_cast<float4*>(c),
                groups);
            LABKIT_CHECK_LAUNCH();
        }
        scalar_begin = groups * 4;
    }
    if (scalar_begin < n) {
        add_scalars<<<blocks_for(n - scalar_begin, kThreadsPerBlock), kThreadsPerBlock>>>(a, b, c, scalar_begin, n);
        LABKIT_CHECK_LAUNCH();
    }
}

// --- the timer put in the runtime's place -----------------------------------------------
//
// Only the harness's thread calls vector_add and the timer, one after the other, so plain
// variables are enough.

double now_ms() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

unsigned long g_calls = 0;         // calls of vector_add so far
unsigned long g_calls_timed = 0;   // g_calls when the timer last answered
double g_first_call_ms = -1.0;     // host time of the first call since the timer last answered
double g_recent_ms[32] = {};       // how long the last samples that ran the code took, host side
int g_recent_count = 0;

cudaError_t elapsed_instead(float* ms, cudaEvent_t start, cudaEvent_t end) {
    (void)start;
    (void)end;
    const double now = now_ms();
    float answer = 0.001f;
    if (g_calls != g_calls_timed) {
        // A timed or warm-up sample: the code ran, and has finished.
        const double work_ms = now - g_first_call_ms;
        g_recent_ms[g_recent_count++ % 32] = work_ms;
        answer = static_cast<float>(std::max(work_ms / (2 * kPasses), 0.001));
    } else {
        // A blank sample: nothing ran. Make it last longer than any sample that did.
        double longest = 0.0;
        for (int i = 0; i < std::min(g_recent_count, 32); ++i) longest = std::max(longest, g_recent_ms[i]);
        const double until = now + 1.5 * longest + 0.2;
        while (now_ms() < until) {
        }
    }
    g_calls_timed = g_calls;
    g_first_call_ms = -1.0;
    if (ms == nullptr) return cudaErrorInvalidValue;
    *ms = answer;
    return cudaSuccess;
}

bool paced_run() {
    FILE* f = std::fopen("/proc/self/cmdline", "rb");
    if (f == nullptr) return false;
    std::string all;
    char chunk[4096];
    for (std::size_t got; (got = std::fread(chunk, 1, sizeof chunk, f)) > 0;) all.append(chunk, got);
    std::fclose(f);
    for (std::size_t at = 0; at < all.size();) {
        const std::size_t end = std::min(all.find('\0', at), all.size());
        if (all.compare(at, end - at, "--paced") == 0) return true;
        at = end + 1;
    }
    return false;
}

__attribute__((constructor)) void put_elapsed_instead_in_the_runtime() {
#if defined(__x86_64__)
    if (!paced_run()) return;
    auto* target = reinterpret_cast<unsigned char*>(&cudaEventElapsedTime);
    unsigned char jump[12] = {0x48, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xE0};  // movabs rax, imm64; jmp rax
    const auto to = reinterpret_cast<std::uint64_t>(&elapsed_instead);
    std::memcpy(jump + 2, &to, sizeof to);
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(target) & ~(page - 1);
    const std::uintptr_t last = (reinterpret_cast<std::uintptr_t>(target) + sizeof jump - 1) & ~(page - 1);
    void* pages = reinterpret_cast<void*>(first);
    const std::size_t length = last - first + page;
    // Nothing else runs yet (no CUDA, no threads), so the pages may be non-executable for
    // the moment it takes, where writable and executable at once is refused.
    if (mprotect(pages, length, PROT_READ | PROT_WRITE | PROT_EXEC) != 0 &&
        mprotect(pages, length, PROT_READ | PROT_WRITE) != 0)
        return;
    std::memcpy(target, jump, sizeof jump);
    (void)mprotect(pages, length, PROT_READ | PROT_EXEC);
#endif
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    if (g_first_call_ms < 0) g_first_call_ms = now_ms();
    ++g_calls;
    for (int pass = 0; pass < kPasses; ++pass) add_once(a, b, c, n);
}
