// A bitonic sort that breaks ties between equal keys by the reverse of the input index:
// keys come out right and every value travels with its key, but equal keys come out in
// reverse input order, so the sort is not stable.
#include <cstdint>

#include "labkit/check.hpp"
#include "sort.hpp"

namespace {

constexpr int kThreadsPerBlock = 256;

std::size_t padded_size(std::size_t n) {
    std::size_t p = 1;
    while (p < n) p *= 2;
    return p;
}

__global__ void load_items_kernel(const std::uint32_t* keys, std::uint64_t* items, std::size_t n, std::size_t p) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) items[i] = (static_cast<std::uint64_t>(keys[i]) << 32) | (~i & 0xffffffffu) ;
    else if (i < p) items[i] = ~std::uint64_t(0);  // padding: after every real item
}

__global__ void bitonic_step_kernel(std::uint64_t* items, std::size_t p, std::size_t k, std::size_t j) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const std::size_t partner = i ^ j;
    if (i >= p || partner <= i) return;
    const std::uint64_t a = items[i], b = items[partner];
    const bool ascending = (i & k) == 0;
    if ((a > b) == ascending) {
        items[i] = b;
        items[partner] = a;
    }
}

__global__ void store_kernel(const std::uint64_t* items, const std::uint32_t* values_in, std::uint32_t* keys_out,
                             std::uint32_t* values_out, std::size_t n) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    keys_out[i] = static_cast<std::uint32_t>(items[i] >> 32);
    if (values_out) values_out[i] = values_in[~items[i] & 0xffffffffu];
}

void bitonic_sort(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                  std::uint32_t* values_out, std::size_t n, void* workspace) {
    if (n == 0) return;
    const std::size_t p = padded_size(n);
    auto* items = static_cast<std::uint64_t*>(workspace);
    const auto blocks = static_cast<unsigned>((p + kThreadsPerBlock - 1) / kThreadsPerBlock);
    load_items_kernel<<<blocks, kThreadsPerBlock>>>(keys_in, items, n, p);
    LABKIT_CHECK_LAUNCH();
    for (std::size_t k = 2; k <= p; k *= 2) {
        for (std::size_t j = k / 2; j > 0; j /= 2) {
            bitonic_step_kernel<<<blocks, kThreadsPerBlock>>>(items, p, k, j);
            LABKIT_CHECK_LAUNCH();
        }
    }
    store_kernel<<<blocks, kThreadsPerBlock>>>(items, values_in, keys_out, values_out, n);
    LABKIT_CHECK_LAUNCH();
}

}  // namespace

std::size_t sort_workspace_bytes(std::size_t n) { return padded_size(n) * sizeof(std::uint64_t); }

void sort_keys(const std::uint32_t* keys_in, std::uint32_t* keys_out, std::size_t n, void* workspace) {
    bitonic_sort(keys_in, nullptr, keys_out, nullptr, n, workspace);
}

void sort_pairs(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                std::uint32_t* values_out, std::size_t n, void* workspace) {
    bitonic_sort(keys_in, values_in, keys_out, values_out, n, workspace);
}
