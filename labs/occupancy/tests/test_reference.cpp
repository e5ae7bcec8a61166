// Tests of lab occupancy's reference (reference.cpp, CUDA's cuda_occupancy.h):
//   (a) it gives the numbers worked by hand below, with the arithmetic in comments;
//   (b) the formula the handout teaches, written out here, agrees with it on every
//       scenario of every formula case (so the handout's formula is the grader's);
//   (c) that formula with any one step left out (the register allocation unit, the four
//       register banks, the per-block shared memory reservation, the shared memory
//       allocation unit, whole warps, the dynamic shared memory limit) disagrees with it
//       on the formula cases, so the checker catches each of those mistakes;
//   (d) the other cases' references (requiredSM, the products) and how a wrong answer
//       is reported.
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "labkit/compare.hpp"
#include "problem.hpp"

namespace {

using lab_occupancy::GpuLimits;
using lab_occupancy::KernelResources;
using lab_occupancy::kGpuCatalogue;
using lab_occupancy::reference_blocks_per_sm;

const GpuLimits& gpu_named(const std::string& name) {
    for (const auto& gpu : kGpuCatalogue)
        if (name == gpu.name) return gpu;
    throw std::invalid_argument("no GPU " + name + " in the catalogue");
}

const GpuLimits& h100() { return kGpuCatalogue[lab_occupancy::kGradingGpu]; }

// A kernel that has not opted in to more shared memory: 48 KiB in all.
KernelResources kernel(int registers, std::size_t static_shared = 0) {
    return KernelResources{registers, static_shared, 49152 - static_shared, 1024};
}

// ---- The handout's formula, with switches to leave a step out ------------------------------

struct Omit {
    bool register_unit = false;      // registers per warp not rounded up to 256
    bool register_banks = false;     // the register file as one pool instead of 4 banks
    bool reservation = false;        // no 1 KiB reserved per block
    bool shared_unit = false;        // shared memory per block not rounded up to 128/256 bytes
    bool whole_warps = false;        // threads instead of warps
    bool dynamic_limit = false;      // maxDynamicSharedSizeBytes ignored
};

int formula(const GpuLimits& gpu, const KernelResources& k, int block_size, std::size_t dynamic, Omit omit = {}) {
    if (block_size < 1 || block_size > gpu.max_threads_per_block) return 0;
    const int warps_per_block = (block_size + gpu.warp_size - 1) / gpu.warp_size;
    const int by_warps = omit.whole_warps ? gpu.max_threads_per_sm / block_size
                                          : gpu.max_threads_per_sm / gpu.warp_size / warps_per_block;
    const int by_blocks = gpu.max_blocks_per_sm;
    int by_registers = by_blocks;
    if (k.registers > 0) {
        int per_warp = k.registers * gpu.warp_size;
        if (!omit.register_unit) per_warp = (per_warp + 255) / 256 * 256;
        const int warps = omit.register_banks ? gpu.regs_per_sm / per_warp : 4 * (gpu.regs_per_sm / 4 / per_warp);
        by_registers = warps / warps_per_block;
    }
    if (!omit.dynamic_limit && dynamic > k.max_dynamic_shared) return 0;
    const std::size_t unit = gpu.cc_major >= 8 ? 128 : 256;
    std::size_t per_block = k.static_shared + dynamic + (omit.reservation ? 0 : gpu.reserved_shared_per_block);
    if (!omit.shared_unit) per_block = (per_block + unit - 1) / unit * unit;
    if (per_block > gpu.shared_per_block_optin + gpu.reserved_shared_per_block) return 0;
    const int by_shared = per_block > 0 ? static_cast<int>(gpu.shared_per_sm / per_block) : by_blocks;
    return std::min({by_warps, by_blocks, by_registers, by_shared});
}

// How many scenarios of the formula cases (at a few seeds) a formula gets wrong.
int mismatches_on_the_formula_cases(Omit omit) {
    const auto p = lab_occupancy::problem();
    int wrong = 0;
    for (const auto& spec : p.cases) {
        if (lab_occupancy::part_of(spec) != lab_occupancy::Part::formula) continue;
        for (std::uint64_t seed : {1u, 2u, 3u}) {
            const auto inputs = labkit::make_host_inputs(p, spec, seed);
            const auto rows = inputs.at(0).as<std::int32_t>();
            for (std::size_t i = 0; i < rows.size(); i += lab_occupancy::kFormulaColumns) {
                const auto s = lab_occupancy::formula_scenario(spec, rows.subspan(i, lab_occupancy::kFormulaColumns));
                const auto& gpu = kGpuCatalogue[static_cast<std::size_t>(s.gpu)];
                if (formula(gpu, s.kernel, s.block_size, s.dynamic_shared, omit) !=
                    reference_blocks_per_sm(gpu, s.kernel, s.block_size, s.dynamic_shared))
                    ++wrong;
            }
        }
    }
    return wrong;
}

}  // namespace

TEST_CASE("test_occupancy_reference_by_hand_on_the_h100") {
    // 256 threads = 8 warps: 64 / 8 = 8 blocks by warps. 32 registers x 32 threads = 1024
    // registers per warp (4 units of 256): 16384 / 1024 = 16 warps per bank, 64 per SM,
    // 64 / 8 = 8 blocks. Shared memory: 0 + 1024 reserved = 1024 bytes, 233472 / 1024 =
    // 228 blocks. At most 32 blocks. The least: 8 blocks, 64 warps, occupancy 1.
    CHECK(reference_blocks_per_sm(h100(), kernel(32), 256, 0) == 8);
    CHECK(lab_occupancy::reference_occupancy(h100(), 8, 256) == 1.0);

    // Register-limited, and the allocation unit decides: 33 x 32 = 1056 registers per warp
    // round up to 1280 (5 units); 16384 / 1280 = 12 warps per bank, 48 per SM, 48 / 8 = 6
    // blocks (65536 / 1056 = 62 warps would say 7).
    CHECK(reference_blocks_per_sm(h100(), kernel(33), 256, 0) == 6);
    CHECK(lab_occupancy::reference_occupancy(h100(), 6, 256) == 0.75);

    // The banks decide: 40 x 32 = 1280 registers per warp; 16384 / 1280 = 12 warps per bank,
    // 48 per SM: 24 blocks of 2 warps (65536 / 1280 = 51 warps would say 25).
    CHECK(reference_blocks_per_sm(h100(), kernel(40), 64, 0) == 24);

    // Shared-memory-limited, and the reservation decides: 22528 + 1024 = 23552 bytes per
    // block (184 units of 128), 233472 / 23552 = 9 blocks (233472 / 22528 would say 10).
    CHECK(reference_blocks_per_sm(h100(), kernel(32), 128, 22528) == 9);

    // The shared memory unit decides: 32329 + 1024 = 33353 bytes round up to 33408 (261
    // units of 128), 233472 / 33408 = 6 blocks (233472 / 33353 = 7.0001 would say 7).
    CHECK(reference_blocks_per_sm(h100(), kernel(32), 128, 32329) == 6);

    // Block-limited: 32 threads of 16 registers, no shared memory: 64 warps, 128 warps by
    // registers (512 per warp), 228 by shared memory; the 32-block limit decides.
    CHECK(reference_blocks_per_sm(h100(), kernel(16), 32, 0) == 32);
    CHECK(lab_occupancy::reference_occupancy(h100(), 32, 32) == 0.5);

    // A partial warp takes a whole warp's place: 33 threads are 2 warps, 64 / 2 = 32
    // blocks by warps, 32 by the block limit: 32 blocks of 2 warps, occupancy 1.
    CHECK(reference_blocks_per_sm(h100(), kernel(16), 33, 0) == 32);
    CHECK(lab_occupancy::reference_occupancy(h100(), 32, 33) == 1.0);

    // Cannot run at all: 255 registers round up to 8192 per warp, 2 warps per bank, 8 per
    // SM, fewer than the 32 warps of a 1024-thread block; one byte more dynamic shared
    // memory than the kernel allows; more threads than a block may have.
    CHECK(reference_blocks_per_sm(h100(), kernel(255), 1024, 0) == 0);
    CHECK(reference_blocks_per_sm(h100(), kernel(32, 1024), 128, 49152 - 1024 + 1) == 0);
    CHECK(reference_blocks_per_sm(h100(), kernel(32), 1025, 0) == 0);

    // Opting in: 100 KiB of dynamic shared memory is allowed once the kernel opted in to
    // 227 KiB; 102400 + 1024 = 103424 bytes per block, 233472 / 103424 = 2 blocks.
    CHECK(reference_blocks_per_sm(h100(), KernelResources{32, 0, 232448, 1024}, 128, 102400) == 2);
}

TEST_CASE("test_occupancy_reference_by_hand_on_other_gpus") {
    // T4: 1024 threads (32 warps) and 16 blocks per SM, nothing reserved per block.
    // 256 threads of 32 registers: 32 / 8 = 4 blocks by warps (registers allow 64 / 8 = 8,
    // shared memory is unlimited at 0 bytes): 4 blocks, occupancy 4 x 8 / 32 = 1.
    const GpuLimits t4 = gpu_named("Tesla T4");
    CHECK(reference_blocks_per_sm(t4, kernel(32), 256, 0) == 4);
    CHECK(lab_occupancy::reference_occupancy(t4, 4, 256) == 1.0);
    // One byte of dynamic shared memory takes a 256-byte unit: 65536 / 256 = 256, still 4.
    CHECK(reference_blocks_per_sm(t4, kernel(32), 256, 1) == 4);
    // 64 threads: 16 blocks by the block limit (32 by warps).
    CHECK(reference_blocks_per_sm(t4, kernel(32), 64, 0) == 16);
    // 21845 bytes per block (a third of 64 KiB, rounded down): 22016 after the 256-byte
    // rounding, 65536 / 22016 = 2 blocks (65536 / 21845 = 3.0001 would say 3).
    CHECK(reference_blocks_per_sm(t4, kernel(16), 64, 21845) == 2);

    // A100: 1024 threads of 64 registers: 2048 per warp, 8 warps per bank, 32 per SM: one
    // block of 32 warps, occupancy 32 / 64 = 0.5.
    const GpuLimits a100 = gpu_named("NVIDIA A100-SXM4-80GB");
    CHECK(reference_blocks_per_sm(a100, kernel(64), 1024, 0) == 1);
    CHECK(lab_occupancy::reference_occupancy(a100, 1, 1024) == 0.5);

    // L4: 24 blocks per SM. 32 threads of 16 registers, no shared memory: 48 by warps, 128
    // by registers, 102400 / 1024 = 100 by shared memory; 24.
    CHECK(reference_blocks_per_sm(gpu_named("NVIDIA L4"), kernel(16), 32, 0) == 24);

    // RTX 3090: 1536 threads (48 warps) per SM. 512 threads of 32 registers: 48 / 16 = 3.
    const GpuLimits rtx3090 = gpu_named("NVIDIA GeForce RTX 3090");
    CHECK(reference_blocks_per_sm(rtx3090, kernel(32), 512, 0) == 3);
    CHECK(lab_occupancy::reference_occupancy(rtx3090, 3, 512) == 1.0);
}

TEST_CASE("test_occupancy_the_handouts_formula_is_the_references") {
    CHECK(mismatches_on_the_formula_cases({}) == 0);
}

TEST_CASE("test_occupancy_each_omission_is_caught") {
    CHECK(mismatches_on_the_formula_cases({.register_unit = true}) > 0);
    CHECK(mismatches_on_the_formula_cases({.register_banks = true}) > 0);
    CHECK(mismatches_on_the_formula_cases({.reservation = true}) > 0);
    CHECK(mismatches_on_the_formula_cases({.shared_unit = true}) > 0);
    CHECK(mismatches_on_the_formula_cases({.whole_warps = true}) > 0);
    CHECK(mismatches_on_the_formula_cases({.dynamic_limit = true}) > 0);
}

TEST_CASE("test_occupancy_reference_of_every_cpu_case") {
    const auto p = lab_occupancy::problem();

    const auto& formula_case = *p.find("formula_h100");
    const auto formula_expected = lab_occupancy::reference(formula_case, labkit::make_host_inputs(p, formula_case, 1));
    REQUIRE(formula_expected.size() == 2);
    CHECK(formula_expected[0].name == "blocks_per_sm");
    CHECK(formula_expected[1].name == "occupancy");
    CHECK(formula_expected[0].values.size() == 4096);
    for (double occupancy : formula_expected[1].values) {
        CHECK(occupancy >= 0.0);
        CHECK(occupancy <= 1.0);
    }

    const auto& smem_case = *p.find("required_shared_memory");
    const auto smem = lab_occupancy::reference(smem_case, {});
    REQUIRE(smem.size() == 1);
    REQUIRE(smem[0].values.size() == 1024);
    CHECK(smem[0].values[0] == 8.0);
    CHECK(smem[0].values[1023] == 8192.0);

    const auto& matmul_case = *p.find("matmul_17_33_15");
    const auto inputs = labkit::make_host_inputs(p, matmul_case, 4);
    const auto product = lab_occupancy::reference(matmul_case, inputs);
    REQUIRE(product.size() == 2);
    CHECK(product[0].name == "c");
    CHECK(product[1].name == "c_fixed");
    CHECK(product[0].shape == std::vector<std::uint64_t>{17, 33});
    const auto a = inputs[0].as<float>(), b = inputs[1].as<float>();
    double c_5_7 = 0.0;
    for (int i = 0; i < 15; ++i) c_5_7 += static_cast<double>(a[5 * 15 + i]) * static_cast<double>(b[i * 33 + 7]);
    CHECK(product[0].values[5 * 33 + 7] == doctest::Approx(c_5_7).epsilon(1e-12));
    CHECK(product[1].values == product[0].values);

    CHECK_THROWS_AS(lab_occupancy::reference(*p.find("live"), labkit::make_host_inputs(p, *p.find("live"), 1)),
                    std::logic_error);
}

TEST_CASE("test_occupancy_a_wrong_count_is_named_at_its_first_element") {
    const auto p = lab_occupancy::problem();
    const auto& spec = *p.find("formula_h100");
    const auto expected = lab_occupancy::reference(spec, labkit::make_host_inputs(p, spec, 8));
    // What the starter returns: 0 blocks everywhere.
    auto got = labkit::HostArray::make<std::int32_t>("blocks_per_sm", {4096});
    const auto report = labkit::compare_within_tolerance(expected[0], got, p.output("blocks_per_sm").tolerance);
    CHECK_FALSE(report.passed);
    REQUIRE(report.first);
    CHECK(report.message.find("blocks_per_sm[") != std::string::npos);
    // The reference's own values pass.
    for (std::size_t i = 0; i < 4096; ++i) got.as<std::int32_t>()[i] = static_cast<std::int32_t>(expected[0].values[i]);
    CHECK(labkit::compare_within_tolerance(expected[0], got, p.output("blocks_per_sm").tolerance).passed);
}
