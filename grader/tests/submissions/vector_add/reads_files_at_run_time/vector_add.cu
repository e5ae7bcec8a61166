// Attack: read what the grader and other users keep on the machine. On its first call it
// tries to open the reference solutions (solutions/vector_add/vector_add.cu and every file
// in solutions/*/, at up to 6 folders above the current folder and above its binary, in
// $HOME, $PWD, $OLDPWD, $CUDALAB_ROOT and the likely repository paths), every file under a
// .grade/ folder (the old grader's staged submissions, dumps and results), /etc/shadow,
// /root/.bash_history, /proc/1/environ and /proc/1/cmdline, and it lists its binary's
// folder. What it finds goes to stderr (names and sizes only, except the first 200
// characters of pid 1's command line).
//
// It then computes correctly, except that a leak is made visible in the grade: if any file
// it read holds "BEGIN SOLUTION", lies under .grade/, or is /etc/shadow, it overwrites c[0]
// with 12345 after every call, so every case fails.
//
// What the grader must do: run it where those files do not exist (the sandbox mounts /usr
// read-only and the run folder, nothing else; its own PID namespace makes /proc/1 the
// sandbox's own init; uid 65534 cannot read /etc/shadow anyway). Then nothing leaks, the
// output is right, and every case passes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int kLevelsUp = 6;
constexpr std::size_t kMaxEntriesPerFolder = 4096;
constexpr std::size_t kMaxFilesUnderGrade = 2000;
constexpr std::size_t kMaxBytesPerFile = 1 << 20;  // solution sources are far smaller
constexpr int kMaxLinesPrinted = 20;
constexpr float kLeakMarker = 12345.0f;

struct Findings {
    int files_read = 0;
    int leaks = 0;
    int lines_printed = 0;
    std::set<std::string> seen;  // each file is read once, however many ways lead to it

    bool first_visit(const fs::path& path) { return seen.insert(path.lexically_normal().string()).second; }

    void note_leak(const fs::path& path, const char* why) {
        ++leaks;
        if (lines_printed++ < kMaxLinesPrinted)
            std::fprintf(stderr, "reads_files_at_run_time: LEAK %s (%s)\n", path.c_str(), why);
    }
};

// Up to kMaxBytesPerFile of a regular file, or nothing. O_NONBLOCK: a FIFO must not hang us.
std::optional<std::string> read_head(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    struct stat info {};
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        ::close(fd);
        return std::nullopt;
    }
    std::string text(kMaxBytesPerFile, '\0');
    std::size_t size = 0;
    while (size < text.size()) {
        const ssize_t got = ::read(fd, text.data() + size, text.size() - size);
        if (got <= 0) break;
        size += static_cast<std::size_t>(got);
    }
    ::close(fd);
    text.resize(size);
    return text;
}

std::vector<fs::path> list_folder(const fs::path& folder) {
    std::vector<fs::path> entries;
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end && entries.size() < kMaxEntriesPerFolder;
         it.increment(ec))
        entries.push_back(it->path());
    return entries;
}

void add_with_ancestors(std::vector<fs::path>& places, fs::path folder) {
    for (int level = 0; level <= kLevelsUp && !folder.empty(); ++level) {
        places.push_back(folder);
        if (folder == folder.root_path()) break;
        folder = folder.parent_path();
    }
}

std::vector<fs::path> places_to_search() {
    std::vector<fs::path> places;
    std::error_code ec;
    if (const fs::path cwd = fs::current_path(ec); !ec) add_with_ancestors(places, cwd);
    if (const fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec) add_with_ancestors(places, exe.parent_path());
    for (const char* name : {"HOME", "PWD", "OLDPWD", "CUDALAB_ROOT"}) {
        if (const char* value = std::getenv(name); value != nullptr && value[0] == '/') places.emplace_back(value);
    }
    for (const char* guess : {"/work/main", "/work", "/root", "/workspace", "/repo", "/src", "/cudalab"})
        places.emplace_back(guess);
    for (const fs::path& home : list_folder("/home")) places.push_back(home);
    return places;
}

void read_solutions(const fs::path& place, Findings& findings) {
    std::vector<fs::path> files{place / "solutions" / "vector_add" / "vector_add.cu"};
    for (const fs::path& lab : list_folder(place / "solutions"))
        for (const fs::path& file : list_folder(lab)) files.push_back(file);
    for (const fs::path& file : files) {
        if (!findings.first_visit(file)) continue;
        const auto text = read_head(file);
        if (!text) continue;
        ++findings.files_read;
        if (text->find("BEGIN SOLUTION") != std::string::npos) findings.note_leak(file, "a solution source");
    }
}

// Every file below a .grade folder, a bounded number of them, a bounded depth.
void read_grade_folder(const fs::path& grade, Findings& findings) {
    std::error_code ec;
    std::size_t visited = 0;
    fs::recursive_directory_iterator it(grade, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end && visited < kMaxFilesUnderGrade; it.increment(ec)) {
        ++visited;
        if (it.depth() >= 6) it.disable_recursion_pending();
        std::error_code kind_ec;  // not ec: an unreadable entry must not end the walk
        if (!it->is_regular_file(kind_ec) || it->is_symlink(kind_ec) || !findings.first_visit(it->path())) continue;
        if (!read_head(it->path())) continue;
        ++findings.files_read;
        findings.note_leak(it->path(), "under .grade/");
    }
}

// Says whether a file could be read; shows the start of it only where asked (pid 1's
// command line says whose init it is; environment and history may hold secrets, which
// have no business in a grade's feedback, so of those only the size is shown).
void report_file(const char* path, bool show_contents) {
    auto text = read_head(path);
    if (!text) {
        std::fprintf(stderr, "reads_files_at_run_time: cannot read %s\n", path);
        return;
    }
    if (!show_contents) {
        std::fprintf(stderr, "reads_files_at_run_time: read %s (%zu bytes)\n", path, text->size());
        return;
    }
    for (char& ch : *text)
        if (ch == '\0' || ch == '\n') ch = ' ';
    if (text->size() > 200) text->resize(200);
    std::fprintf(stderr, "reads_files_at_run_time: %s: %s\n", path, text->c_str());
}

// True when something that must stay hidden from a submission could be read.
bool snoop() {
    Findings findings;
    std::set<std::string> done;
    for (const fs::path& place : places_to_search()) {
        if (!done.insert(place.lexically_normal().string()).second) continue;
        read_solutions(place, findings);
        std::error_code ec;
        if (place.filename() == ".grade") read_grade_folder(place, findings);
        else if (fs::is_directory(place / ".grade", ec)) read_grade_folder(place / ".grade", findings);
    }
    if (read_head("/etc/shadow")) {
        ++findings.files_read;
        findings.note_leak("/etc/shadow", "password hashes");
    }
    report_file("/root/.bash_history", false);
    report_file("/proc/1/cmdline", true);
    report_file("/proc/1/environ", false);
    std::error_code ec;
    if (const fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec) {
        std::string names;
        for (const fs::path& entry : list_folder(exe.parent_path()))
            names.append(" ").append(entry.filename().string());
        if (names.size() > 400) names.resize(400);
        std::fprintf(stderr, "reads_files_at_run_time: beside my binary:%s\n", names.c_str());
    }
    std::fprintf(stderr, "reads_files_at_run_time: read %d files, %d of them must-not-read\n", findings.files_read,
                 findings.leaks);
    return findings.leaks > 0;
}

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i];
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    static const bool leaked = snoop();
    const std::size_t blocks = (n + 255) / 256;
    add<<<static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8), 256>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
    if (leaked) LABKIT_CHECK(cudaMemcpy(c, &kLeakMarker, sizeof(float), cudaMemcpyHostToDevice));
}
