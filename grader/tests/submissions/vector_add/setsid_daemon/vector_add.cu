// Attack: leave a process behind. On its first call it double-forks; the grandchild calls
// setsid() (a new session and process group, so killing the program's group misses it),
// renames itself "cudalab-daemon", keeps the inherited stdout and stderr open on purpose
// (a grader that waits for its pipes to close waits for the daemon) and lives for up to
// 10 minutes, appending a heartbeat line every second to a file in its run folder and to
// one in /tmp. The program itself reaps the intermediate child and computes correctly.
//
// What the grader must do: end every process the run started when the run ends, whatever
// its session or group (the sandbox's PID namespace does: when its init exits, the kernel
// kills everything in it), and never wait on the pipes for longer than the program lives.
// The grade is that of a correct program; the suite checks that no cudalab-daemon is left.
// (Closing nothing also means the daemon holds copies of the GPU driver's descriptors,
// which can keep the run's GPU memory from being freed while it lives: one more reason
// it must not outlive the run.)
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

constexpr int kLifetimeS = 600;

// Only async-signal-safe calls from here on: the parent has CUDA's threads, the child
// has a copy of their locks and none of them.
void append_line(const char* path, const char* line, std::size_t length) {
    const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    (void)!::write(fd, line, length);
    ::close(fd);
}

[[noreturn]] void live_as_daemon() {
    ::setsid();
    ::prctl(PR_SET_NAME, "cudalab-daemon", 0, 0, 0);
    static const char kLine[] = "cudalab-daemon: still here\n";
    for (int second = 0; second < kLifetimeS; ++second) {
        ::sleep(1);
        append_line("cudalab-daemon.heartbeat", kLine, sizeof kLine - 1);  // the run folder (cwd)
        append_line("/tmp/cudalab-daemon.heartbeat", kLine, sizeof kLine - 1);
    }
    ::_exit(0);
}

void start_daemon() {
    const pid_t child = ::fork();
    if (child < 0) {
        std::perror("setsid_daemon: fork");
        return;
    }
    if (child == 0) {
        if (::fork() == 0) live_as_daemon();
        ::_exit(0);  // the grandchild is orphaned, re-parented to init (or a subreaper)
    }
    int status = 0;
    (void)::waitpid(child, &status, 0);
    std::fprintf(stderr, "setsid_daemon: started a daemon that lives for up to %d s\n", kLifetimeS);
}

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i];
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    static const bool started = (start_daemon(), true);
    (void)started;
    const std::size_t blocks = (n + 255) / 256;
    add<<<static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8), 256>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
}
