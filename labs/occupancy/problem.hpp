// Lab occupancy, CPU side: the cases and how their inputs follow from the seed
// (problem.cpp, in every lab binary); the catalogue of GPUs that the formula cases
// describe, and how a row of seeded integers becomes one scenario (the harness and the
// checker decode the same rows the same way); and the reference (reference.cpp: CUDA's
// own occupancy calculator, cuda_occupancy.h, on the CPU; linked only into the trusted
// checker and the tests). The live case's reference asks the GPU instead
// (live_reference.hpp, in the checker only).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "labkit/problem.hpp"

namespace lab_occupancy {

labkit::Problem problem();

// What a case exercises: lab.toml's parameter `part`.
enum class Part : std::int64_t {
    formula = 1,                 // functions 1 and 2 on scenarios from the catalogue below
    live = 2,                    // function 1 on this GPU's probes, and choose_block_size
    required_shared_memory = 3,  // function 3 for every block size
    matmul = 4,                  // matmul_dynamic and matmul_fixed (bench cases: matmul_dynamic)
};
Part part_of(const labkit::CaseSpec& spec);  // throws std::invalid_argument for an unknown part

// Whether the case is a bench case (it then runs matmul_dynamic alone, and the harness
// times matmul_fixed beside it as its library slot).
bool is_bench_case(const labkit::CaseSpec& spec);

// ---- The catalogue ------------------------------------------------------------------

// One GPU as the occupancy formula sees it: the cudaDeviceProp fields the formula reads,
// with the values cudaGetDeviceProperties reports on that GPU.
struct GpuLimits {
    const char* name;                       // prop.name
    int cc_major, cc_minor;                 // prop.major, prop.minor
    int sm_count;                           // prop.multiProcessorCount
    int max_threads_per_block;              // prop.maxThreadsPerBlock
    int max_threads_per_sm;                 // prop.maxThreadsPerMultiProcessor
    int max_blocks_per_sm;                  // prop.maxBlocksPerMultiProcessor
    int warp_size;                          // prop.warpSize
    int regs_per_sm;                        // prop.regsPerMultiprocessor
    int regs_per_block;                     // prop.regsPerBlock
    std::size_t shared_per_sm;              // prop.sharedMemPerMultiprocessor
    std::size_t shared_per_block;           // prop.sharedMemPerBlock (without opting in)
    std::size_t shared_per_block_optin;     // prop.sharedMemPerBlockOptin
    std::size_t reserved_shared_per_block;  // prop.reservedSharedMemPerBlock
};

inline constexpr std::array<GpuLimits, 7> kGpuCatalogue{{
    {"Tesla T4", 7, 5, 40, 1024, 1024, 16, 32, 65536, 65536, 65536, 49152, 65536, 0},
    {"NVIDIA A100-SXM4-80GB", 8, 0, 108, 1024, 2048, 32, 32, 65536, 65536, 167936, 49152, 166912, 1024},
    {"NVIDIA GeForce RTX 3090", 8, 6, 82, 1024, 1536, 16, 32, 65536, 65536, 102400, 49152, 101376, 1024},
    {"NVIDIA L4", 8, 9, 58, 1024, 1536, 24, 32, 65536, 65536, 102400, 49152, 101376, 1024},
    {"NVIDIA H100 80GB HBM3", 9, 0, 132, 1024, 2048, 32, 32, 65536, 65536, 233472, 49152, 232448, 1024},
    {"NVIDIA H200", 9, 0, 132, 1024, 2048, 32, 32, 65536, 65536, 233472, 49152, 232448, 1024},
    {"NVIDIA B200", 10, 0, 148, 1024, 2048, 32, 32, 65536, 65536, 233472, 49152, 232448, 1024},
}};

// The grading GPU, H100 SXM: the handout's worked numbers are its.
inline constexpr int kGradingGpu = 4;

// A kernel as the formula sees it: the cudaFuncAttributes fields it reads.
struct KernelResources {
    int registers;                   // numRegs, per thread
    std::size_t static_shared;       // sharedSizeBytes
    std::size_t max_dynamic_shared;  // maxDynamicSharedSizeBytes: the most dynamic shared memory a launch may ask for
    int max_threads_per_block;       // maxThreadsPerBlock
};

// One question to the formula: this kernel, on this GPU, in blocks of block_size
// threads that each ask for dynamic_shared bytes of dynamic shared memory.
struct Scenario {
    int gpu;  // index into kGpuCatalogue
    KernelResources kernel;
    int block_size;
    std::size_t dynamic_shared;
};

// A formula case's input is an array of rows of kFormulaColumns seeded integers in
// [0, 2^31 - 1]; each row becomes one scenario (lab.toml [inputs] says how).
inline constexpr std::size_t kFormulaColumns = 6;
Scenario formula_scenario(const labkit::CaseSpec& spec, std::span<const std::int32_t> row);

// ---- The live case --------------------------------------------------------------------

// One question about this GPU: probe kernel `probe` (labs/occupancy/probes.cuh), in
// blocks of block_size threads with dynamic_shared bytes of dynamic shared memory.
struct LiveScenario {
    int probe;
    int block_size;
    std::size_t dynamic_shared;
};

// The live case's input: rows of kLiveColumns seeded integers. A row's block size is
// at most its probe's maxThreadsPerBlock (max_threads_per_probe[probe], from
// cudaFuncGetAttributes in the process that decodes it), and its dynamic shared memory
// at most kLiveMaxDynamicShared, which every probe can launch with without opting in.
inline constexpr std::size_t kLiveColumns = 3;
inline constexpr std::size_t kLiveMaxDynamicShared = 32768;
LiveScenario live_scenario(std::span<const std::int32_t> row, std::span<const int> max_threads_per_probe);

// ---- Contracts ------------------------------------------------------------------------

// The largest block size CUDA allows, and the block sizes the required_shared_memory
// case asks about (1 to this).
inline constexpr int kMaxBlockSize = 1024;

// required_shared_memory's contract (occupancy.hpp): two float tiles of block_size
// elements each.
constexpr std::size_t contract_shared_memory_bytes(int block_size) {
    return 2 * static_cast<std::size_t>(block_size) * sizeof(float);
}

// The lab sheet's 4^floor(log(t) / log(4)) in integers: the largest power of 4 that is at
// most t (0 for t < 1). In floating point, log(64) / log(4) can come out a hair below 3.
constexpr int largest_power_of_4_at_most(int t) {
    if (t < 1) return 0;
    int power = 1;
    while (power <= t / 4) power *= 4;
    return power;
}

// ---- The reference ----------------------------------------------------------------------

// Every case's expected outputs but the live case's (which needs the GPU and throws here).
std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs);

// Blocks per SM by CUDA's own calculator, cudaOccMaxActiveBlocksPerMultiprocessor of
// cuda_occupancy.h, in its default device state (no cache or carveout preference), with
// the kernel described as cudaOccFuncAttributes's constructor from cudaFuncAttributes
// describes one. Throws std::runtime_error when the calculator reports an error.
int reference_blocks_per_sm(const GpuLimits& gpu, const KernelResources& kernel, int block_size,
                            std::size_t dynamic_shared);

// Active warps over the most warps an SM holds (occupancy.hpp's contract).
double reference_occupancy(const GpuLimits& gpu, int active_blocks_per_sm, int block_size);

}  // namespace lab_occupancy
