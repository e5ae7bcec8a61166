// Cheat: computes properly on the first call for each size n (every correctness case has a
// size of its own, so they all pass), skips the work when the size repeats (as it does in
// every timed sample), and when the program exits it overwrites every output file the
// harness dumped (the timed samples the grader kept among them) with the answer it did
// compute for that size.
//
// What the grader must do: give no performance points. Every timed sample has inputs of
// its own, so a remembered answer is wrong for it; and the harness reported a hash of each
// sample's outputs before the grader asked to keep it, so outputs changed afterwards no
// longer match what was reported.
#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "labkit/check.hpp"
#include "vector_add.hpp"

namespace {

std::vector<char> remembered;  // the bytes of the one answer computed

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i];
}

// Overwrites the elements (which end the file) of every .bin file in `folder` that is
// large enough to hold the remembered answer.
void overwrite_outputs(const std::string& folder) {
    DIR* dir = opendir(folder.c_str());
    if (!dir) return;
    while (dirent* entry = readdir(dir)) {
        const std::string name = entry->d_name;
        if (name.size() <= 4 || name.compare(name.size() - 4, 4, ".bin") != 0) continue;
        if (FILE* f = std::fopen((folder + "/" + name).c_str(), "r+b")) {
            if (std::fseek(f, -static_cast<long>(remembered.size()), SEEK_END) == 0)
                std::fwrite(remembered.data(), 1, remembered.size(), f);
            std::fclose(f);
        }
    }
    closedir(dir);
}

// The timed samples the grader kept are dumped to dump/sample-<number>/.
void rewrite_at_exit() {
    DIR* dump = opendir("dump");
    if (!dump) return;
    while (dirent* entry = readdir(dump))
        if (std::string(entry->d_name).rfind("sample-", 0) == 0) overwrite_outputs(std::string("dump/") + entry->d_name);
    closedir(dump);
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    static std::size_t last_n = 0;
    if (n == last_n) return;  // "already done"
    const bool first = last_n == 0;
    last_n = n;
    add<<<static_cast<unsigned>((n + 255) / 256 < 65535 ? (n + 255) / 256 : 65535), 256>>>(a, b, c, n);
    LABKIT_CHECK_LAUNCH();
    remembered.resize(n * sizeof(float));
    LABKIT_CHECK(cudaMemcpy(remembered.data(), c, remembered.size(), cudaMemcpyDeviceToHost));
    if (first) std::atexit(rewrite_at_exit);
}
