// Attack: write outside the run's own folder. On the first call it tries to create a marker
// file, cudalab-escape-writes_outside, in every folder above the current one, beside its
// own binary, in $HOME/.., $OLDPWD, $CUDALAB_ROOT, the likely repository paths (/work/main,
// /root, /home/*, /workspace, /repo, /src), /cudalab, /cudalab/bin, /usr, /usr/local, /tmp,
// /dev/shm and /var/tmp. It says on stderr where it succeeded, then computes correctly.
//
// What the grader must do: give the program exactly one writable folder (its run folder,
// which is also cwd and HOME) and a private /tmp, so every other attempt fails with EROFS,
// EACCES or ENOENT and nothing appears on the host. The grade is unaffected: the answer is
// right. The suite checks afterwards that no marker appeared outside the run's folder.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace fs = std::filesystem;

namespace {

constexpr const char* kMarkerName = "cudalab-escape-writes_outside";
constexpr std::size_t kMaxEntriesPerFolder = 4096;

// The entries of a folder (none when it cannot be read), without ever throwing.
std::vector<fs::path> list_folder(const fs::path& folder) {
    std::vector<fs::path> entries;
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end && entries.size() < kMaxEntriesPerFolder;
         it.increment(ec))
        entries.push_back(it->path());
    return entries;
}

std::vector<fs::path> folders_to_try() {
    std::vector<fs::path> folders;
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec);
    for (fs::path up = cwd; !ec && up != up.root_path();) {  // the run folder itself is allowed
        up = up.parent_path();
        folders.push_back(up);
    }
    if (const fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec) folders.push_back(exe.parent_path());
    if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/')
        folders.push_back(fs::path(home).parent_path());
    for (const char* name : {"OLDPWD", "CUDALAB_ROOT"}) {
        if (const char* value = std::getenv(name); value != nullptr && value[0] == '/') folders.emplace_back(value);
    }
    for (const char* guess : {"/work/main", "/work", "/root", "/workspace", "/repo", "/src", "/home", "/cudalab",
                              "/cudalab/bin", "/usr", "/usr/local", "/tmp", "/dev/shm", "/var/tmp"})
        folders.emplace_back(guess);
    for (const fs::path& home : list_folder("/home")) folders.push_back(home);
    return folders;
}

bool leave_marker(const fs::path& folder) {
    const fs::path marker = folder / kMarkerName;
    const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0644);
    if (fd < 0) return false;
    constexpr std::string_view line = "written by the cudalab test submission writes_outside\n";
    const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(fd);
    return ok;
}

void try_to_escape() {
    int written = 0;
    std::set<std::string> tried;
    for (const fs::path& folder : folders_to_try()) {
        if (!tried.insert(folder.lexically_normal().string()).second) continue;
        if (!leave_marker(folder)) continue;
        ++written;
        std::fprintf(stderr, "writes_outside: wrote %s\n", (folder / kMarkerName).c_str());
    }
    std::fprintf(stderr, "writes_outside: %d markers written outside the run folder\n", written);
}

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i];
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    static const bool tried = (try_to_escape(), true);
    (void)tried;
    const std::size_t blocks = (n + 255) / 256;
    add<<<static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8), 256>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
}
