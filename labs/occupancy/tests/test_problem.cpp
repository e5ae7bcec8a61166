// Tests of lab occupancy's CPU side (problem.hpp): the cases reach the harness, the inputs
// follow from the seed alone, every seeded row decodes into a scenario that a real GPU and
// kernel could have, the edge cases reach the edges, and the contracts' helpers.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "lab_spec.hpp"
#include "problem.hpp"

namespace {

using lab_occupancy::kGpuCatalogue;
using lab_occupancy::Part;

std::vector<lab_occupancy::Scenario> scenarios_of(const labkit::Problem& p, const std::string& name,
                                                  std::uint64_t seed) {
    const auto& spec = *p.find(name);
    const auto inputs = labkit::make_host_inputs(p, spec, seed);
    const auto rows = inputs.at(0).as<std::int32_t>();
    std::vector<lab_occupancy::Scenario> out;
    for (std::size_t i = 0; i < rows.size(); i += lab_occupancy::kFormulaColumns)
        out.push_back(lab_occupancy::formula_scenario(spec, rows.subspan(i, lab_occupancy::kFormulaColumns)));
    return out;
}

}  // namespace

TEST_CASE("test_occupancy_spec_reaches_the_harness") {
    const auto p = lab_occupancy::problem();
    CHECK(p.name == "occupancy");
    REQUIRE(p.find("formula_h100"));
    CHECK(lab_occupancy::part_of(*p.find("formula_h100")) == Part::formula);
    CHECK(lab_occupancy::part_of(*p.find("live")) == Part::live);
    CHECK(lab_occupancy::part_of(*p.find("required_shared_memory")) == Part::required_shared_memory);
    CHECK(lab_occupancy::part_of(*p.find("matmul_17_33_15")) == Part::matmul);
    REQUIRE(p.find("matmul_4096"));
    CHECK(lab_occupancy::is_bench_case(*p.find("matmul_4096")));
    CHECK_FALSE(lab_occupancy::is_bench_case(*p.find("matmul_1000")));
    CHECK(p.flops(*p.find("matmul_4096")) == 2.0 * 4096.0 * 4096.0 * 4096.0);
    CHECK(p.bytes_moved(*p.find("matmul_4096")) == 4.0 * 3.0 * 4096.0 * 4096.0);
    // The grading GPU of the handout is the catalogue's H100, and formula_h100 asks about it.
    CHECK(std::string(kGpuCatalogue[lab_occupancy::kGradingGpu].name) == "NVIDIA H100 80GB HBM3");
    CHECK(p.find("formula_h100")->param("gpu") == lab_occupancy::kGradingGpu);
}

TEST_CASE("test_occupancy_inputs_depend_only_on_the_seed") {
    const auto p = lab_occupancy::problem();
    for (const char* name : {"formula_every_gpu", "live", "matmul_17_33_15"}) {
        const auto& c = *p.find(name);
        const auto x = labkit::make_host_inputs(p, c, 42), y = labkit::make_host_inputs(p, c, 42),
                   z = labkit::make_host_inputs(p, c, 43);
        CAPTURE(name);
        CHECK(x[0].bytes == y[0].bytes);
        CHECK(x[0].bytes != z[0].bytes);
    }
    CHECK(labkit::make_host_inputs(p, *p.find("required_shared_memory"), 1).empty());
    const auto matmul = labkit::make_host_inputs(p, *p.find("matmul_17_33_15"), 5);
    REQUIRE(matmul.size() == 2);
    CHECK(matmul[0].shape == std::vector<std::uint64_t>{17, 15});
    CHECK(matmul[1].shape == std::vector<std::uint64_t>{15, 33});
}

TEST_CASE("test_occupancy_scenarios_are_ones_a_gpu_could_see") {
    const auto p = lab_occupancy::problem();
    for (const char* name : {"formula_h100", "formula_h100_edges", "formula_every_gpu", "formula_every_gpu_edges"}) {
        std::set<int> gpus;
        bool partial_warp = false, whole_warps = false, no_dynamic = false, over_default = false;
        for (const auto& s : scenarios_of(p, name, 11)) {
            CAPTURE(name);
            REQUIRE(s.gpu >= 0);
            REQUIRE(s.gpu < static_cast<int>(kGpuCatalogue.size()));
            const auto& gpu = kGpuCatalogue[static_cast<std::size_t>(s.gpu)];
            gpus.insert(s.gpu);
            CHECK(s.kernel.registers >= 16);
            CHECK(s.kernel.registers <= 255);
            CHECK(s.block_size >= 1);
            CHECK(s.block_size <= 1024);
            CHECK(s.kernel.static_shared <= 16384);
            CHECK(s.kernel.max_threads_per_block == 1024);
            // A kernel may ask for what it opted in to, or for the default 48 KiB in all.
            const bool default_limit = s.kernel.static_shared + s.kernel.max_dynamic_shared == gpu.shared_per_block;
            const bool optin_limit = s.kernel.static_shared + s.kernel.max_dynamic_shared == gpu.shared_per_block_optin;
            CHECK((default_limit || optin_limit));
            partial_warp = partial_warp || s.block_size % 32 != 0;
            whole_warps = whole_warps || s.block_size % 32 == 0;
            no_dynamic = no_dynamic || s.dynamic_shared == 0;
            over_default = over_default || s.kernel.static_shared + s.dynamic_shared > gpu.shared_per_block;
        }
        CHECK(partial_warp);
        CHECK(whole_warps);
        CHECK(no_dynamic);
        CHECK(over_default);
        if (p.find(name)->param("gpu") >= 0) CHECK(gpus == std::set<int>{lab_occupancy::kGradingGpu});
        else CHECK(gpus.size() == kGpuCatalogue.size());
    }
}

TEST_CASE("test_occupancy_edges_reach_the_edges") {
    const auto p = lab_occupancy::problem();
    bool at_limit = false, over_limit = false, one_byte = false;
    std::set<int> registers, block_sizes;
    for (const auto& s : scenarios_of(p, "formula_every_gpu_edges", 3)) {
        at_limit = at_limit || s.dynamic_shared == s.kernel.max_dynamic_shared;
        over_limit = over_limit || s.dynamic_shared == s.kernel.max_dynamic_shared + 1;
        one_byte = one_byte || s.dynamic_shared == 1;
        registers.insert(s.kernel.registers);
        block_sizes.insert(s.block_size);
    }
    CHECK(at_limit);
    CHECK(over_limit);
    CHECK(one_byte);
    for (int r : {32, 33, 64, 65, 255}) CHECK(registers.count(r) == 1);
    for (int b : {1, 31, 32, 33, 1023, 1024}) CHECK(block_sizes.count(b) == 1);
}

TEST_CASE("test_occupancy_live_scenarios_respect_each_probe") {
    const auto p = lab_occupancy::problem();
    const auto& spec = *p.find("live");
    const auto inputs = labkit::make_host_inputs(p, spec, 9);
    const auto rows = inputs.at(0).as<std::int32_t>();
    const std::vector<int> max_threads = {1024, 896, 1024, 640};
    std::set<int> probes;
    for (std::size_t i = 0; i < rows.size(); i += lab_occupancy::kLiveColumns) {
        const auto s = lab_occupancy::live_scenario(rows.subspan(i, lab_occupancy::kLiveColumns), max_threads);
        probes.insert(s.probe);
        CHECK(s.block_size >= 1);
        CHECK(s.block_size <= max_threads[static_cast<std::size_t>(s.probe)]);
        CHECK(s.dynamic_shared <= lab_occupancy::kLiveMaxDynamicShared);
    }
    CHECK(probes.size() == max_threads.size());
}

TEST_CASE("test_occupancy_contract_helpers") {
    CHECK(lab_occupancy::contract_shared_memory_bytes(1) == 8);
    CHECK(lab_occupancy::contract_shared_memory_bytes(256) == 2048);
    CHECK(lab_occupancy::contract_shared_memory_bytes(1024) == 8192);
    CHECK(lab_occupancy::largest_power_of_4_at_most(0) == 0);
    for (int t = 1; t <= 1024; ++t) {
        int expected = 1;
        while (expected * 4 <= t) expected *= 4;
        CAPTURE(t);
        CHECK(lab_occupancy::largest_power_of_4_at_most(t) == expected);
    }
    for (int power : {1, 4, 16, 64, 256, 1024}) CHECK(lab_occupancy::largest_power_of_4_at_most(power) == power);
}
