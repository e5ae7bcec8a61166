// A keyed 128-bit hash of an output array, computed by the harness on the GPU after
// every graded timed sample and again by the trusted checker on the CPU over what was
// dumped. The harness reports each sample's hash before the grader says whether it
// wants that sample's outputs, so the outputs it then dumps must be the ones that
// existed when the sample ended: recomputing them later, once the program knows which
// sample is checked, would need a second preimage of this hash.
//
// Definition (the same inline functions on both sides):
//   the array's bytes, zero-padded to a multiple of 8, are words w_0..w_{m-1};
//   leaf i = leaf(w_i, i, key);
//   a level of values is cut into chunks of kHashChunk, each padded with pad(key) and
//   reduced by the balanced binary tree of `combine` over adjacent pairs; the chunk
//   roots form the next level, until one value remains (one chunk: its root);
//   the hash = combine(that root, leaf(byte length, kLengthIndex, key)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "labkit/generate.hpp"

namespace labkit {

struct Hash128 {
    std::uint64_t a = 0, b = 0;
    LABKIT_HOST_DEVICE friend constexpr bool operator==(const Hash128& x, const Hash128& y) {
        return x.a == y.a && x.b == y.b;
    }
};

inline constexpr std::size_t kHashChunk = 2048;  // values per chunk: a power of two
inline constexpr std::uint64_t kLengthIndex = ~std::uint64_t(0);

LABKIT_HOST_DEVICE constexpr std::uint64_t rotl64(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

LABKIT_HOST_DEVICE constexpr Hash128 hash_leaf(std::uint64_t word, std::uint64_t index, Hash128 key) {
    return {mix64(word ^ key.a ^ (index * 0x9E3779B97F4A7C15ull)),
            mix64(rotl64(word, 17) ^ key.b ^ (index * 0xC2B2AE3D27D4EB4Full))};
}

// Not commutative, so the tree binds every value to its position.
LABKIT_HOST_DEVICE constexpr Hash128 hash_combine(Hash128 x, Hash128 y) {
    return {mix64(x.a ^ rotl64(y.a, 23) ^ 0x243F6A8885A308D3ull) + y.a,
            mix64(x.b ^ rotl64(y.b, 41) ^ 0x13198A2E03707344ull) + y.b};
}

LABKIT_HOST_DEVICE constexpr Hash128 hash_pad(Hash128 key) {
    return {mix64(key.a ^ 0xA4093822299F31D0ull), mix64(key.b ^ 0x082EFA98EC4E6C89ull)};
}

// The hash of `bytes` bytes at `data` (host memory), by the definition above.
Hash128 hash_bytes_on_host(const void* data, std::size_t bytes, Hash128 key);

// 32 lowercase hex digits (a then b) and back; parse throws std::invalid_argument.
std::string to_hex(Hash128 h);
Hash128 hash_from_hex(const std::string& text);

}  // namespace labkit
