// Tests of the reduction checker's near-miss verdict (bound.hpp long_chain_error_bound and
// the reference's near-miss advice), both ways, through the checker's own reference and
// comparison:
//   * a sum in an order the contract allows (a tree) passes;
//   * a sum that chains every block's partial sum into one float, as atomicAdd of block
//     sums does, fails with the near-miss explanation and its numbers;
//   * an element or a block left out fails with the plain message.
// Every order is replayed in float on the CPU (IEEE-754 float addition gives the GPU's bits).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bound.hpp"
#include "labkit/compare.hpp"
#include "problem.hpp"

namespace {

constexpr std::size_t kBlock = 256;

labkit::HostArray inputs_of(const std::vector<float>& x) {
    auto a = labkit::HostArray::make<float>("in", {x.size()});
    for (std::size_t i = 0; i < x.size(); ++i) a.as<float>()[i] = x[i];
    return a;
}

// What the checker says of `got` as the sum of x.
labkit::CompareReport verdict(const std::vector<float>& x, float got) {
    const labkit::CaseSpec spec{"n", {{"n", static_cast<std::int64_t>(x.size())}}};
    const auto expected = lab_reduction::reference(spec, {inputs_of(x)});
    auto out = labkit::HostArray::make<float>("sum", {1});
    out.as<float>()[0] = got;
    return labkit::compare_within_tolerance(expected.at(0), out, labkit::Tolerance{0.0, 0.0, -1});
}

// Pairwise (tree) float sum of x[begin, end): the order of a shared-memory tree.
float tree_sum(const std::vector<float>& x, std::size_t begin, std::size_t end) {
    if (end - begin == 1) return x[begin];
    const std::size_t half = begin + (end - begin + 1) / 2;
    return tree_sum(x, begin, half) + tree_sum(x, half, end);
}

// Each block of kBlock elements summed as a tree, then every block's sum added into one
// float, one after another: atomicAdd of block sums (in block order; any order would do).
float chained_block_sums(const std::vector<float>& x, std::size_t skip_block = SIZE_MAX) {
    float total = 0.0f;
    for (std::size_t b = 0; b * kBlock < x.size(); ++b) {
        if (b == skip_block) continue;
        total += tree_sum(x, b * kBlock, std::min(x.size(), (b + 1) * kBlock));
    }
    return total;
}

// Block sums combined as a tree too: inside the contract.
float tree_of_block_sums(const std::vector<float>& x, std::size_t skip_block = SIZE_MAX) {
    std::vector<float> sums;
    for (std::size_t b = 0; b * kBlock < x.size(); ++b)
        sums.push_back(b == skip_block ? 0.0f : tree_sum(x, b * kBlock, std::min(x.size(), (b + 1) * kBlock)));
    return tree_sum(sums, 0, sums.size());
}

// 0.7f everywhere: each block's sum rounds the same way, so a chain of them drifts
// steadily (the worst case of atomicAdd, and the lecture's "sequence of additions").
std::vector<float> constant_inputs(std::size_t n) { return std::vector<float>(n, 0.7f); }

}  // namespace

TEST_CASE("test_near_miss_a_tree_passes") {
    for (std::size_t n : {std::size_t{1025}, std::size_t{1} << 16, (std::size_t{1} << 20) + 3}) {
        const auto x = constant_inputs(n);
        CAPTURE(n);
        CHECK(verdict(x, tree_of_block_sums(x)).passed);
        CHECK(verdict(x, tree_sum(x, 0, n)).passed);
    }
}

TEST_CASE("test_near_miss_atomic_add_of_block_sums_is_explained") {
    const std::size_t n = (std::size_t{1} << 20) + 3;
    const auto x = constant_inputs(n);
    const auto r = verdict(x, chained_block_sums(x));
    REQUIRE_FALSE(r.passed);
    CHECK(r.near_miss);
    CHECK(r.message.find("sum[0] is wrong: expected ") == 0);
    CHECK(r.message.find(": off by ") != std::string::npos);
    CHECK(r.message.find("(relative ") != std::string::npos);
    CHECK(r.message.find("a tree of additions stays within ") != std::string::npos);
    CHECK(r.message.find("such as atomicAdd of every block's sum into one float") != std::string::npos);
    CHECK(r.message.find("(up to ") != std::string::npos);
    CHECK(r.message.find("{near}") == std::string::npos);
    CHECK(r.message.find("(handout: 'The tolerance')") != std::string::npos);
}

TEST_CASE("test_near_miss_a_dropped_element_or_block_gets_the_plain_message") {
    SUBCASE("an element left out where a chain could not go wrong (n = 1025: no room between the bounds)") {
        auto x = constant_inputs(1025);
        const float full = tree_sum(x, 0, x.size());
        const auto r = verdict(x, full - 0.7f);
        REQUIRE_FALSE(r.passed);
        CHECK_FALSE(r.near_miss);
        CHECK(r.message.find("(allowed difference ") != std::string::npos);
        CHECK(r.message.find("atomicAdd") == std::string::npos);
    }
    SUBCASE("a block of 256 left out at n = 2^16, far beyond what any chain rounds") {
        const auto x = constant_inputs(std::size_t{1} << 16);
        for (float got : {tree_of_block_sums(x, 3), chained_block_sums(x, 3)}) {
            const auto r = verdict(x, got);
            REQUIRE_FALSE(r.passed);
            CHECK_FALSE(r.near_miss);
            CHECK(r.message.find("(allowed difference ") != std::string::npos);
        }
    }
    SUBCASE("a block counted twice at n = 2^20 + 3") {
        const std::size_t n = (std::size_t{1} << 20) + 3;
        const auto x = constant_inputs(n);
        const auto r = verdict(x, tree_of_block_sums(x) + tree_sum(x, 0, kBlock) * 2.0f);
        REQUIRE_FALSE(r.passed);
        CHECK_FALSE(r.near_miss);
    }
}

TEST_CASE("test_near_miss_bound_is_never_below_the_contract_and_grows_with_the_grid") {
    for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{1025}, std::size_t{1} << 20, std::size_t{1} << 26}) {
        CAPTURE(n);
        CHECK(reduction::long_chain_error_bound(n, 1000.0) >= reduction::reduction_error_bound(n, 1000.0));
    }
    CHECK(reduction::long_chain_error_bound(1025, 1000.0) == reduction::reduction_error_bound(1025, 1000.0));
    CHECK(reduction::long_chain_error_bound(std::size_t{1} << 26, 1000.0) >
          100.0 * reduction::reduction_error_bound(std::size_t{1} << 26, 1000.0));
}
