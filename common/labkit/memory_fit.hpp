// Whether a bench case fits in the GPU's free memory, decided before anything of it is
// allocated: a laptop GPU with 4 or 6 GiB then skips the 2^28 cases (about 3 GiB each)
// with a sentence saying so, and runs the others, instead of failing the whole run with
// out-of-memory. Pure functions (no CUDA call), unit-tested on a machine without a GPU;
// harness.cu supplies cudaMemGetInfo's free memory and the case's sizes.
#pragma once

#include <cstddef>
#include <string>

namespace labkit {

// What a lab's DeviceRun allocates for one case besides the inputs (the harness allocates
// those itself), known before the DeviceRun is made; each lab's harness.cu says.
struct RunMemory {
    std::size_t outputs = 0;    // the output arrays
    std::size_t workspace = 0;  // the scratch the lab's API asks for (e.g. reduce_sum_workspace_bytes(n))
    std::size_t library = 0;    // the library baseline's temporary storage (CUB), allocated with the case
};

// Everything one case allocates on the GPU, part by part.
struct CaseMemory {
    std::size_t inputs = 0;
    RunMemory run;
    std::size_t copy_baseline = 0;  // --bench: the copy roof's two buffers, allocated after the case's are freed

    // The most that is allocated at once. It saturates rather than wraps: a workspace size
    // comes from the code under test and may be absurd.
    std::size_t peak() const;
};

// The copy baseline's two buffers for a case whose byte model says it moves `bytes_moved`
// bytes: half read, half written, each rounded up to 256 bytes (what harness.cu allocates).
std::size_t copy_baseline_half_bytes(double bytes_moved);
inline std::size_t copy_baseline_bytes(double bytes_moved) { return 2 * copy_baseline_half_bytes(bytes_moved); }

// Besides the estimate itself, a case needs headroom that no estimate sees: allocations
// are rounded up to whole pages, CUDA loads kernels' modules (CUB's among them) lazily on
// their first launch, and other programs on the GPU (a laptop's desktop) allocate while
// the case runs. So a case runs only where its estimate plus 10 % plus 256 MiB is free.
inline constexpr std::size_t kMemoryMarginBytes = std::size_t{256} << 20;
inline constexpr std::size_t kMemoryMarginPercent = 10;

struct MemoryFit {
    bool fits = true;
    std::size_t needed = 0;       // the case's peak
    std::size_t with_margin = 0;  // what must be free for it to run
    std::size_t free = 0;         // the GPU's free memory before the case
};

MemoryFit check_memory_fit(std::size_t needed, std::size_t free_bytes);

// "3.2 GiB", "640 MiB", "12 KiB", "4 bytes".
std::string bytes_text(std::size_t bytes);

// Why a case that does not fit was skipped, e.g. "needs about 3.0 GiB of GPU memory
// (3.6 GiB with a safety margin), 1.9 GiB free on NVIDIA GeForce RTX 3050 Laptop GPU".
std::string describe_memory_shortfall(const MemoryFit& fit, const std::string& device_name);

// The estimate's parts, e.g. "inputs 2.0 GiB, outputs 1.0 GiB, workspace 4 KiB"
// (parts of zero bytes are left out).
std::string describe_case_memory(const CaseMemory& memory);

}  // namespace labkit
