// The fake harness: main() calls the toy API, as a lab's harness calls the student's
// functions, and uses labkit's checks, inline functions and std::vector<float>.
#include <cstdio>

#include "fake_labkit.hpp"
#include "labkit/check.hpp"

// Every member of std::vector<float>, emitted weak; the student's file emits them too.
template class std::vector<float>;

// A strong function of the harness's own.
const char* harness_banner() { return "fake harness"; }

int main(int argc, char**) {
    std::vector<float> a;
    for (int i = 0; i < argc + 7; ++i) a.push_back(static_cast<float>(i));
    std::vector<float> out(a.size());
    LABKIT_CHECK(cudaSetDevice(0));
    std::printf("%s %zu\n", harness_banner(), toy_workspace_bytes(a.size()));
    toy_add(a.data(), out.data(), a.size());
    ++labkit::calls();
    return labkit::summarise(out) > 0.0 ? 0 : labkit::count_positive(a);
}
