// Tests of the scan checker's near-miss verdict, per prefix, both ways, through the
// checker's own reference and comparison:
//   * prefixes within the contract pass (block scans whose totals are combined as a tree);
//   * a scan that carries every small block's total into the next one after another (a
//     chain as long as the grid) fails with the near-miss explanation;
//   * an element left out fails with the plain message.
// Every order is replayed in float on the CPU (IEEE-754 float addition gives the GPU's bits).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "bound.hpp"
#include "labkit/compare.hpp"
#include "problem.hpp"

namespace {

constexpr std::size_t kBlock = 256;

labkit::HostArray floats(const std::string& name, const std::vector<float>& x) {
    auto a = labkit::HostArray::make<float>(name, {x.size()});
    std::copy(x.begin(), x.end(), a.as<float>().begin());
    return a;
}

// What the checker says of `got` as the inclusive scan of x.
labkit::CompareReport verdict(const std::vector<float>& x, const std::vector<float>& got) {
    const labkit::CaseSpec spec{"n", {{"n", static_cast<std::int64_t>(x.size())}, {"integer", 0},
                                      {"inclusive", 1}, {"exclusive", 0}}};
    const auto expected = lab_scan::reference(spec, {floats("in", x)});
    return labkit::compare_within_tolerance(expected.at(0), floats("inclusive", got), labkit::Tolerance{0.0, 0.0, -1});
}

float tree_sum(const std::vector<float>& x, std::size_t begin, std::size_t end) {
    if (end - begin == 1) return x[begin];
    const std::size_t half = begin + (end - begin + 1) / 2;
    return tree_sum(x, begin, half) + tree_sum(x, half, end);
}

// Hillis-Steele inclusive scan of x[begin, end) in float: log2(256) = 8 levels, a tree.
std::vector<float> local_scan(const std::vector<float>& x, std::size_t begin, std::size_t end) {
    std::vector<float> a(x.begin() + static_cast<std::ptrdiff_t>(begin), x.begin() + static_cast<std::ptrdiff_t>(end));
    for (std::size_t stride = 1; stride < a.size(); stride *= 2) {
        std::vector<float> next = a;
        for (std::size_t i = stride; i < a.size(); ++i) next[i] = a[i] + a[i - stride];
        a = std::move(next);
    }
    return a;
}

// Block-local scans plus a carry into each block.
std::vector<float> scan_with_carries(const std::vector<float>& x, const std::vector<float>& carry) {
    std::vector<float> out(x.size());
    for (std::size_t b = 0; b * kBlock < x.size(); ++b) {
        const std::size_t begin = b * kBlock, end = std::min(x.size(), begin + kBlock);
        const auto local = local_scan(x, begin, end);
        for (std::size_t i = begin; i < end; ++i) out[i] = carry[b] + local[i - begin];
    }
    return out;
}

std::vector<float> block_totals(const std::vector<float>& x) {
    std::vector<float> totals;
    for (std::size_t b = 0; b * kBlock < x.size(); ++b)
        totals.push_back(tree_sum(x, b * kBlock, std::min(x.size(), (b + 1) * kBlock)));
    return totals;
}

// Carries chained one block after another: carry[b] = carry[b-1] + total[b-1].
std::vector<float> chained_carries(const std::vector<float>& totals) {
    std::vector<float> carry(totals.size(), 0.0f);
    for (std::size_t b = 1; b < totals.size(); ++b) carry[b] = carry[b - 1] + totals[b - 1];
    return carry;
}

// Carries as a tree: an exclusive Hillis-Steele scan of the totals (log2 of the block
// count levels).
std::vector<float> tree_carries(const std::vector<float>& totals) {
    const auto inclusive = local_scan(totals, 0, totals.size());
    std::vector<float> carry(totals.size(), 0.0f);
    for (std::size_t b = 1; b < totals.size(); ++b) carry[b] = inclusive[b - 1];
    return carry;
}

}  // namespace

TEST_CASE("test_scan_near_miss_tree_carries_pass_and_chained_carries_are_explained") {
    const std::size_t n = (std::size_t{1} << 20) + 5;
    const std::vector<float> x(n, 0.7f);  // every block total rounds alike: a chain drifts steadily
    const auto totals = block_totals(x);
    CHECK(verdict(x, scan_with_carries(x, tree_carries(totals))).passed);

    const auto r = verdict(x, scan_with_carries(x, chained_carries(totals)));
    REQUIRE_FALSE(r.passed);
    CHECK(r.near_miss);
    CHECK(r.message.find("inclusive[") == 0);
    CHECK(r.message.find(": off by ") != std::string::npos);
    CHECK(r.message.find("a tree of additions stays within ") != std::string::npos);
    CHECK(r.message.find("carrying each block's total into the next block one after another") != std::string::npos);
    CHECK(r.message.find("{near}") == std::string::npos);
}

TEST_CASE("test_scan_near_miss_an_element_left_out_gets_the_plain_message") {
    const std::size_t n = (std::size_t{1} << 20) + 5;
    std::vector<float> x(n, 0.7f);
    auto got = scan_with_carries(x, tree_carries(block_totals(x)));
    for (std::size_t i = 100; i < n; ++i) got[i] -= 0.7f;  // x[100] left out of every later prefix
    const auto r = verdict(x, got);
    REQUIRE_FALSE(r.passed);
    CHECK_FALSE(r.near_miss);
    CHECK(r.message.find("inclusive[100] is wrong") == 0);
    CHECK(r.message.find("(allowed difference ") != std::string::npos);
}
