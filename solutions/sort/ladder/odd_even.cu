// Lab sort, ladder rung: odd-even transposition sort, as lecture 8 has it. n phases; in an
// even phase every pair (0,1), (2,3), ... is compared and exchanged where out of order, in
// an odd phase every pair (1,2), (3,4), .... After n phases any input is sorted. Each phase
// is one launch (the launch boundary is the barrier between phases), so the sort takes n
// launches and O(n^2) work: correct, stable (only a strictly greater key moves right),
// and hopeless beyond a few thousand keys.
#include <cstdint>

#include "labkit/check.hpp"
#include "sort.hpp"

namespace {

constexpr int kThreadsPerBlock = 256;

template <bool kWithValues>
__global__ void odd_even_phase_kernel(std::uint32_t* keys, std::uint32_t* values, std::size_t n, int phase) {
    const std::size_t left = 2 * (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) + phase;
    if (left + 1 >= n) return;
    const std::uint32_t a = keys[left], b = keys[left + 1];
    if (a > b) {
        keys[left] = b;
        keys[left + 1] = a;
        if constexpr (kWithValues) {
            const std::uint32_t va = values[left];
            values[left] = values[left + 1];
            values[left + 1] = va;
        }
    }
}

template <bool kWithValues>
void odd_even_sort(std::uint32_t* keys, std::uint32_t* values, std::size_t n) {
    const std::size_t pairs = n / 2 + 1;
    const auto blocks = static_cast<unsigned>((pairs + kThreadsPerBlock - 1) / kThreadsPerBlock);
    for (std::size_t phase = 0; phase < n; ++phase) {
        odd_even_phase_kernel<kWithValues><<<blocks, kThreadsPerBlock>>>(keys, values, n, static_cast<int>(phase % 2));
        LABKIT_CHECK_LAUNCH();
    }
}

}  // namespace

std::size_t sort_workspace_bytes(std::size_t) { return 0; }

void sort_keys(const std::uint32_t* keys_in, std::uint32_t* keys_out, std::size_t n, void*) {
    LABKIT_CHECK(cudaMemcpyAsync(keys_out, keys_in, n * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice));
    odd_even_sort<false>(keys_out, nullptr, n);
}

void sort_pairs(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                std::uint32_t* values_out, std::size_t n, void*) {
    LABKIT_CHECK(cudaMemcpyAsync(keys_out, keys_in, n * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice));
    LABKIT_CHECK(cudaMemcpyAsync(values_out, values_in, n * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice));
    odd_even_sort<true>(keys_out, values_out, n);
}
