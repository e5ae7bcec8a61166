// The student API of lab sort. The harness calls these functions; the student implements
// them in sort.cu.
#pragma once

#include <cstddef>
#include <cstdint>

// How many bytes of device workspace sort_keys and sort_pairs need for n elements (any n,
// 0 included). The harness calls it before timing starts and hands either function a
// workspace of that size, filled with garbage.
std::size_t sort_workspace_bytes(std::size_t n);

// keys_out[0..n) = the n keys of keys_in[0..n), in ascending order. Device pointers; n is
// at least 1 and below 2^32. keys_in is left as it is. Launch on the default stream; do not
// synchronise with the host and do not allocate memory here.
void sort_keys(const std::uint32_t* keys_in, std::uint32_t* keys_out, std::size_t n, void* workspace);

// A stable sort of key/value pairs: keys_out holds the keys in ascending order and
// values_out[j] is the value that came in with keys_out[j]; pairs with equal keys keep the
// order they had in the input. Device pointers; the same rules as sort_keys.
void sort_pairs(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                std::uint32_t* values_out, std::size_t n, void* workspace);
