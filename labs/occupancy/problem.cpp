#include "problem.hpp"

#include <limits>
#include <stdexcept>
#include <string>

#include "lab_spec.hpp"

namespace lab_occupancy {

namespace {

// The edge values the formula_edges case draws from: register counts on both sides of
// a 256-register allocation unit per warp (32 regs x 32 threads = 1024 = 4 units; 33
// regs need 5), block sizes on both sides of whole warps, and static shared sizes
// from nothing to a third of the default 48 KiB.
constexpr int kEdgeRegisters[] = {16, 24, 32, 33, 40, 48, 56, 64, 65, 72, 80, 96, 128, 129, 168, 200, 255};
constexpr int kEdgeBlockSizes[] = {1,   31,  32,  33,  64,  96,  127, 128, 129, 192, 255,
                                   256, 257, 288, 384, 512, 640, 768, 1000, 1023, 1024};
constexpr std::size_t kEdgeStaticShared[] = {0, 1, 4, 1024, 2048, 4096, 12288, 16384};

// The largest static shared memory a random scenario declares (16 KiB).
constexpr std::uint32_t kMaxStaticShared = 16384;

template <class T, std::size_t N> T pick(const T (&values)[N], std::uint32_t random) { return values[random % N]; }

// A block size: half the time a whole number of warps (32 to 1024), half the time any
// size from 1 to 1024, so that partial warps come up often.
int random_block_size(std::uint32_t random) {
    const std::uint32_t rest = random >> 1;
    return (random & 1u) ? static_cast<int>(32 * (1 + rest % 32)) : static_cast<int>(1 + rest % 1024);
}

// Registers per thread as kernels have them: 16 to 64 five times in eight, 65 to 128
// twice, 129 to 255 once.
int random_registers(std::uint32_t random) {
    const std::uint32_t rest = random / 8;
    switch (random % 8) {
        case 5:
        case 6: return static_cast<int>(65 + rest % 64);
        case 7: return static_cast<int>(129 + rest % 127);
        default: return static_cast<int>(16 + rest % 49);
    }
}

std::vector<labkit::InputSpec> inputs(const labkit::CaseSpec& spec) {
    // Every random integer is in [0, 2^31 - 1]; formula_scenario and live_scenario
    // turn them into scenarios.
    const auto any_int = labkit::Fill::uniform_int(0, 0, std::numeric_limits<std::int32_t>::max());
    switch (part_of(spec)) {
        case Part::formula: {
            const auto count = spec.param("count");
            const auto gpu = spec.param("gpu");
            if (count < 1) throw std::invalid_argument("case " + spec.name + ": count must be at least 1");
            if (gpu < -1 || gpu >= static_cast<std::int64_t>(kGpuCatalogue.size()))
                throw std::invalid_argument("case " + spec.name +
                                            ": gpu must be -1 (any) or an index into the catalogue (0 to " +
                                            std::to_string(kGpuCatalogue.size() - 1) + ")");
            return {{"scenarios", labkit::DType::i32, {static_cast<std::uint64_t>(count), kFormulaColumns}, any_int}};
        }
        case Part::live: {
            const auto count = spec.param("count");
            if (count < 1) throw std::invalid_argument("case " + spec.name + ": count must be at least 1");
            return {{"probe_scenarios", labkit::DType::i32, {static_cast<std::uint64_t>(count), kLiveColumns},
                     any_int}};
        }
        case Part::required_shared_memory: return {};  // the block sizes 1 to 1024, no randomness
        case Part::matmul: {
            const auto m = spec.param("m"), n = spec.param("n"), k = spec.param("k");
            if (m < 1 || n < 1 || k < 1)
                throw std::invalid_argument("case " + spec.name + ": m, n and k must be at least 1");
            return {{"a", labkit::DType::f32, {static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(k)},
                     labkit::Fill::uniform_float(0, -1.0f, 1.0f)},
                    {"b", labkit::DType::f32, {static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(n)},
                     labkit::Fill::uniform_float(1, -1.0f, 1.0f)}};
        }
    }
    throw std::logic_error("unreachable");
}

}  // namespace

labkit::Problem problem() { return LABKIT_PROBLEM(inputs); }

Part part_of(const labkit::CaseSpec& spec) {
    const auto part = spec.param("part");
    if (part < 1 || part > 4)
        throw std::invalid_argument("case " + spec.name + ": part must be 1 (formula), 2 (live), "
                                    "3 (required_shared_memory) or 4 (matmul)");
    return static_cast<Part>(part);
}

bool is_bench_case(const labkit::CaseSpec& spec) {
    return labkit::find_case(lab_spec::kBenchCases, spec.name) != nullptr;
}

Scenario formula_scenario(const labkit::CaseSpec& spec, std::span<const std::int32_t> row) {
    if (row.size() != kFormulaColumns) throw std::invalid_argument("a formula scenario is a row of 6 integers");
    const auto r = [&](std::size_t i) { return static_cast<std::uint32_t>(row[i]); };
    const bool edges = spec.param("edges") != 0;
    const auto fixed_gpu = spec.param("gpu");

    Scenario s{};
    s.gpu = fixed_gpu >= 0 ? static_cast<int>(fixed_gpu) : static_cast<int>(r(0) % kGpuCatalogue.size());
    const GpuLimits& gpu = kGpuCatalogue.at(static_cast<std::size_t>(s.gpu));

    s.kernel.registers = edges ? pick(kEdgeRegisters, r(1)) : random_registers(r(1));
    s.block_size = edges ? pick(kEdgeBlockSizes, r(2)) : random_block_size(r(2));
    s.kernel.static_shared = edges ? pick(kEdgeStaticShared, r(3))
                                   : (r(3) % 4 == 0 ? 0 : (r(3) >> 2) % (kMaxStaticShared + 1));
    s.kernel.max_threads_per_block = gpu.max_threads_per_block;
    // Half the kernels have opted in (cudaFuncSetAttribute with
    // cudaFuncAttributeMaxDynamicSharedMemorySize) to all the shared memory a block may
    // have; the others keep the default limit of 48 KiB in all.
    const bool opted_in = r(5) % 2 == 1;
    s.kernel.max_dynamic_shared =
        (opted_in ? gpu.shared_per_block_optin : gpu.shared_per_block) - s.kernel.static_shared;

    const std::size_t default_room = gpu.shared_per_block - s.kernel.static_shared;
    const std::size_t optin_room = gpu.shared_per_block_optin - s.kernel.static_shared;
    if (!edges) {
        const std::uint32_t rest = r(4) / 8;
        switch (r(4) % 8) {
            case 0:
            case 1: s.dynamic_shared = 0; break;
            case 2:
            case 3: s.dynamic_shared = rest % 16385; break;                               // up to 16 KiB
            case 4:
            case 5: s.dynamic_shared = rest % (default_room + 1); break;                  // up to the default limit
            case 6: s.dynamic_shared = rest % (s.kernel.max_dynamic_shared + 1); break;  // up to the kernel's limit
            default: s.dynamic_shared = rest % (optin_room + 1); break;  // up to the opt-in limit, opted in or not
        }
        return s;
    }
    const std::uint32_t rest = r(4) / 6;
    switch (r(4) % 6) {
        case 0: s.dynamic_shared = 0; break;
        case 1: s.dynamic_shared = s.kernel.max_dynamic_shared; break;      // all the kernel may ask for
        case 2: s.dynamic_shared = s.kernel.max_dynamic_shared + 1; break;  // one byte more: cannot launch
        case 3:
        case 4: {
            // Exactly as much as lets `blocks` blocks share the SM's shared memory before
            // rounding up to the allocation granularity, and one byte more: the rounding
            // and the per-block reservation decide these.
            const std::size_t blocks = 1 + rest % 32;
            const std::size_t per_block = gpu.shared_per_sm / blocks;
            const std::size_t fixed = s.kernel.static_shared + gpu.reserved_shared_per_block;
            s.dynamic_shared = (per_block > fixed ? per_block - fixed : 0) + (r(4) % 6 == 4 ? 1 : 0);
            break;
        }
        default: s.dynamic_shared = 1; break;  // one byte still takes a whole allocation unit
    }
    return s;
}

LiveScenario live_scenario(std::span<const std::int32_t> row, std::span<const int> max_threads_per_probe) {
    if (row.size() != kLiveColumns) throw std::invalid_argument("a live scenario is a row of 3 integers");
    if (max_threads_per_probe.empty()) throw std::invalid_argument("the live case needs at least one probe");
    const auto r = [&](std::size_t i) { return static_cast<std::uint32_t>(row[i]); };
    LiveScenario s{};
    s.probe = static_cast<int>(r(0) % max_threads_per_probe.size());
    const int max_threads = max_threads_per_probe[static_cast<std::size_t>(s.probe)];
    if (max_threads < 1) throw std::invalid_argument("a probe kernel reports maxThreadsPerBlock < 1");
    s.block_size = random_block_size(r(1));
    if (s.block_size > max_threads) s.block_size = 1 + (s.block_size - 1) % max_threads;
    s.dynamic_shared = r(2) % 4 == 0 ? 0 : (r(2) >> 2) % (kLiveMaxDynamicShared + 1);
    return s;
}

}  // namespace lab_occupancy
