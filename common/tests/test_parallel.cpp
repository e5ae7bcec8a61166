// Tests of labkit/parallel.hpp: the parts cover [0, n) once each and in order, the thread
// count stays within the sandbox's budget, every part runs exactly once (on its own thread
// or, failing that, on the caller's), and an exception in a part reaches the caller.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "labkit/parallel.hpp"

TEST_CASE("test_parallel_parts_cover_the_range_once_in_order") {
    for (std::size_t n : {0, 1, 2, 5, 31, 32, 33, 1000, 1 << 20}) {
        for (std::size_t parts : {1, 2, 3, 7, 32, 64}) {
            CHECK(labkit::part_begin(n, parts, 0) == 0);
            CHECK(labkit::part_begin(n, parts, parts) == n);
            std::size_t smallest = n, largest = 0;
            for (std::size_t part = 0; part < parts; ++part) {
                const std::size_t size = labkit::part_begin(n, parts, part + 1) - labkit::part_begin(n, parts, part);
                smallest = std::min(smallest, size);
                largest = std::max(largest, size);
                CHECK(labkit::part_begin(n, parts, part) <= labkit::part_begin(n, parts, part + 1));
            }
            CHECK(largest - smallest <= 1);  // balanced: the sizes differ by at most one
        }
    }
}

TEST_CASE("test_parallel_thread_count_stays_within_the_sandbox_budget") {
    CHECK(labkit::worker_threads() >= 1);
    CHECK(labkit::worker_threads() <= labkit::kMaxWorkerThreads);
    CHECK(labkit::parallel_parts(0, 100) == 1);
    CHECK(labkit::parallel_parts(199, 100) == 1);  // less than two parts' worth stays on the caller
    CHECK(labkit::parallel_parts(std::size_t(1) << 40, 1) == labkit::worker_threads());
    {
        const labkit::ForcedPartsForTesting forced(7);
        CHECK(labkit::parallel_parts(3, 1000) == 7);
        const labkit::ForcedPartsForTesting nested(2);
        CHECK(labkit::parallel_parts(3, 1000) == 2);
    }
    CHECK(labkit::parallel_parts(3, 1000) == 1);  // each override ends with its scope
}

TEST_CASE("test_parallel_every_part_runs_exactly_once") {
    for (std::size_t parts : {1, 2, 5, 40}) {
        std::vector<std::atomic<int>> runs(parts);
        labkit::run_parts(parts, [&](std::size_t part) { runs[part].fetch_add(1); });
        for (std::size_t part = 0; part < parts; ++part) CHECK(runs[part].load() == 1);
    }
    labkit::run_parts(0, [](std::size_t) { FAIL("no part to run"); });
}

TEST_CASE("test_parallel_for_visits_every_item_once") {
    for (std::size_t n : {0, 1, 17, 1000, (1 << 21) + 3}) {
        for (std::size_t forced : {0, 1, 3, 32}) {
            const auto override_parts = forced ? std::make_unique<labkit::ForcedPartsForTesting>(forced) : nullptr;
            std::vector<unsigned char> seen(n, 0);
            labkit::parallel_for(n, 4, [&](std::size_t begin, std::size_t end) {
                CHECK(begin < end);  // empty parts are not called
                for (std::size_t i = begin; i < end; ++i) ++seen[i];
            });
            std::vector<unsigned char> seen_by_ranges(n, 0);
            labkit::parallel_for_ranges(n, [](std::size_t begin, std::size_t end, void* p) {
                auto& s = *static_cast<std::vector<unsigned char>*>(p);
                for (std::size_t i = begin; i < end; ++i) ++s[i];
            }, &seen_by_ranges);
            CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<std::ptrdiff_t>(n));
            CHECK(std::count(seen_by_ranges.begin(), seen_by_ranges.end(), 1) == static_cast<std::ptrdiff_t>(n));
        }
    }
}

TEST_CASE("test_parallel_an_exception_in_a_part_reaches_the_caller") {
    std::atomic<int> finished{0};
    try {
        labkit::run_parts(6, [&](std::size_t part) {
            if (part == 4 || part == 2) throw std::runtime_error("part " + std::to_string(part));
            finished.fetch_add(1);
        });
        FAIL("run_parts returned normally");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == "part 2");  // the lowest part that threw
    }
    CHECK(finished.load() == 4);  // the others ran to the end
}
