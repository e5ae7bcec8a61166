// Tests of labkit/memory_fit.hpp: what a bench case needs of GPU memory, whether that fits
// in what is free (with the margin), and the sentences for a case that does not.
#include <doctest/doctest.h>

#include <cstddef>
#include <limits>
#include <string>

#include "labkit/memory_fit.hpp"

namespace {
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kGiB = std::size_t{1} << 30;
constexpr std::size_t kN28 = std::size_t{1} << 28;  // the largest bench cases' n
}  // namespace

TEST_CASE("test_memory_fit_peak_is_the_case_or_the_copy_baseline_after_it") {
    labkit::CaseMemory m;
    m.inputs = 2 * kN28 * 4;  // vector_add 2^28: a and b
    m.run.outputs = kN28 * 4;  // c
    m.copy_baseline = labkit::copy_baseline_bytes(12.0 * kN28);
    CHECK(m.copy_baseline == 3 * kGiB);  // two halves of 12n/2 bytes, already multiples of 256
    CHECK(m.peak() == 3 * kGiB);         // the case's buffers are freed before the baseline's
    m.run.workspace = 4096;
    m.run.library = kMiB;
    CHECK(m.peak() == 3 * kGiB + 4096 + kMiB);
}

TEST_CASE("test_memory_fit_copy_baseline_rounds_each_half_up_to_256_bytes") {
    CHECK(labkit::copy_baseline_half_bytes(4.0) == 256);
    CHECK(labkit::copy_baseline_bytes(4.0) == 512);
    CHECK(labkit::copy_baseline_bytes(0.0) == 0);
}

TEST_CASE("test_memory_fit_an_absurd_workspace_saturates_instead_of_wrapping") {
    labkit::CaseMemory m;
    m.inputs = kGiB;
    m.run.workspace = std::numeric_limits<std::size_t>::max();  // what a broken workspace function may return
    CHECK(m.peak() == std::numeric_limits<std::size_t>::max());
    const labkit::MemoryFit fit = labkit::check_memory_fit(m.peak(), 80 * kGiB);
    CHECK_FALSE(fit.fits);
    CHECK(fit.with_margin == std::numeric_limits<std::size_t>::max());
}

TEST_CASE("test_memory_fit_margin_is_ten_percent_plus_256_mib") {
    const labkit::MemoryFit fit = labkit::check_memory_fit(3 * kGiB, 80 * kGiB);
    CHECK(fit.fits);
    CHECK(fit.needed == 3 * kGiB);
    CHECK(fit.with_margin == 3 * kGiB + 3 * kGiB / 100 * 10 + 256 * kMiB);
    CHECK(fit.free == 80 * kGiB);
    // Exactly enough free fits; a byte less does not.
    CHECK(labkit::check_memory_fit(kGiB, kGiB + kGiB / 100 * 10 + 256 * kMiB).fits);
    CHECK_FALSE(labkit::check_memory_fit(kGiB, kGiB + kGiB / 100 * 10 + 256 * kMiB - 1).fits);
    // Even an empty case needs the fixed part.
    CHECK_FALSE(labkit::check_memory_fit(0, 255 * kMiB).fits);
}

TEST_CASE("test_memory_fit_laptop_gpus") {
    // A 4 GiB laptop GPU with about 3.5 GiB free: the 2^26 cases run, the 2^28 ones do not.
    const std::size_t free = 3 * kGiB + kGiB / 2;
    CHECK(labkit::check_memory_fit(3 * (kN28 / 4) * 4, free).fits);  // vector_add 2^26: 768 MiB
    CHECK_FALSE(labkit::check_memory_fit(3 * kN28 * 4, free).fits);  // vector_add 2^28: 3 GiB
    // A 6 GiB one with 5.5 GiB free runs them all.
    CHECK(labkit::check_memory_fit(3 * kN28 * 4, 5 * kGiB + kGiB / 2).fits);
}

TEST_CASE("test_memory_fit_bytes_text") {
    CHECK(labkit::bytes_text(4) == "4 bytes");
    CHECK(labkit::bytes_text(12 * 1024) == "12 KiB");
    CHECK(labkit::bytes_text(640 * kMiB) == "640 MiB");
    CHECK(labkit::bytes_text(3 * kGiB) == "3.0 GiB");
    CHECK(labkit::bytes_text(3 * kGiB + kGiB / 5) == "3.2 GiB");
}

TEST_CASE("test_memory_fit_the_sentence_for_a_case_that_does_not_fit") {
    const labkit::MemoryFit fit = labkit::check_memory_fit(3 * kGiB, 2 * kGiB - 100 * kMiB);
    REQUIRE_FALSE(fit.fits);
    CHECK(labkit::describe_memory_shortfall(fit, "NVIDIA GeForce RTX 3050 Laptop GPU") ==
          "needs about 3.0 GiB of GPU memory (3.5 GiB with a safety margin), 1.9 GiB free on "
          "NVIDIA GeForce RTX 3050 Laptop GPU");
}

TEST_CASE("test_memory_fit_the_parts_of_an_estimate") {
    labkit::CaseMemory m;
    m.inputs = kGiB;
    m.run.outputs = 4;
    m.run.workspace = 8 * 1024;
    m.copy_baseline = 0;
    CHECK(labkit::describe_case_memory(m) == "inputs 1.0 GiB, outputs 4 bytes, workspace 8 KiB");
    m.run.library = 2 * kMiB;
    m.copy_baseline = kGiB;
    CHECK(labkit::describe_case_memory(m) ==
          "inputs 1.0 GiB, outputs 4 bytes, workspace 8 KiB, library scratch 2 MiB, copy baseline (after the case) 1.0 GiB");
    CHECK(labkit::describe_case_memory(labkit::CaseMemory{}) == "nothing");
}
