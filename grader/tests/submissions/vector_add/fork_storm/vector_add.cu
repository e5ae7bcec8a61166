// Attack: a fork storm. On its first call it forks up to 5000 children, each renamed
// "cudalab-storm", sleeping 60 s and then exiting on its own; it stops at the first fork()
// that fails and says on stderr how many succeeded. Then it kills and reaps every child
// and computes correctly. (Bounded on purpose: even with no limit at all, 5000 sleeping
// processes that are gone within a minute cannot take a machine down.)
//
// What the grader must do: cap the processes a run may have (the sandbox's cgroup
// pids.max = 256, or RLIMIT_NPROC where there is no cgroup), so fork() fails early with
// EAGAIN and the machine and the grader's own processes are untouched. The program copes
// with the failure and still computes the right answer, so every case passes.
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <vector>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr int kMaxChildren = 5000;
constexpr unsigned kChildLifetimeS = 60;

// Async-signal-safe calls only: the child is a copy of a process with CUDA's threads.
[[noreturn]] void be_a_storm_child() {
    ::prctl(PR_SET_NAME, "cudalab-storm", 0, 0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);  // die with the program, whatever kills it
    ::sleep(kChildLifetimeS);
    ::_exit(0);
}

void storm() {
    std::vector<pid_t> children;
    children.reserve(kMaxChildren);  // no allocation between forks
    int fork_error = 0;
    while (children.size() < static_cast<std::size_t>(kMaxChildren)) {
        const pid_t pid = ::fork();
        if (pid < 0) {
            fork_error = errno;
            break;
        }
        if (pid == 0) be_a_storm_child();
        children.push_back(pid);
    }
    std::fprintf(stderr, "fork_storm: %zu of %d forks succeeded%s%s\n", children.size(), kMaxChildren,
                 fork_error ? "; then fork failed: " : "", fork_error ? std::strerror(fork_error) : "");
    for (const pid_t pid : children) ::kill(pid, SIGKILL);
    for (const pid_t pid : children) {
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
}

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i];
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    static const bool stormed = (storm(), true);
    (void)stormed;
    const std::size_t blocks = (n + 255) / 256;
    add<<<static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8), 256>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
}
