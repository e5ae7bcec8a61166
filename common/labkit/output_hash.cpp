#include "labkit/output_hash.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "labkit/parallel.hpp"

namespace labkit {
namespace {

// A part of a parallel loop over chunks takes at least this many (8 MiB of data at the first level).
constexpr std::size_t kMinChunksPerPart = 512;

// The balanced adjacent-pair tree over the kHashChunk values of `level`, reduced in place.
Hash128 tree_root(Hash128* level) {
    for (std::size_t width = kHashChunk; width > 1; width /= 2)
        for (std::size_t j = 0; j < width / 2; ++j) level[j] = hash_combine(level[2 * j], level[2 * j + 1]);
    return level[0];
}

// The balanced adjacent-pair tree over one chunk, padded to kHashChunk values.
Hash128 chunk_root(const Hash128* values, std::size_t count, Hash128 pad) {
    Hash128 level[kHashChunk];
    for (std::size_t i = 0; i < kHashChunk; ++i) level[i] = i < count ? values[i] : pad;
    return tree_root(level);
}

std::vector<Hash128> next_level(const std::vector<Hash128>& values, Hash128 pad) {
    std::vector<Hash128> roots((values.size() + kHashChunk - 1) / kHashChunk);
    parallel_for(roots.size(), kMinChunksPerPart, [&](std::size_t begin, std::size_t end) {
        for (std::size_t r = begin; r < end; ++r) {
            const std::size_t first = r * kHashChunk;
            roots[r] = chunk_root(values.data() + first, std::min(kHashChunk, values.size() - first), pad);
        }
    });
    return roots;
}

// The root of the chunk of leaves [first, first + count) of `bytes` bytes at `data`, each
// leaf made where it is needed: the leaves themselves (16 bytes for every 8 of data) are
// never stored.
Hash128 leaf_chunk_root(const unsigned char* data, std::size_t bytes, std::size_t first, std::size_t count,
                        Hash128 key, Hash128 pad) {
    Hash128 level[kHashChunk];
    for (std::size_t i = 0; i < kHashChunk; ++i) {
        if (i >= count) {
            level[i] = pad;
            continue;
        }
        const std::size_t w = first + i;
        std::uint64_t word = 0;
        std::memcpy(&word, data + 8 * w, std::min<std::size_t>(8, bytes - 8 * w));  // little-endian, zero-padded
        level[i] = hash_leaf(word, w, key);
    }
    return tree_root(level);
}

}  // namespace

Hash128 hash_bytes_on_host(const void* data, std::size_t bytes, Hash128 key) {
    const std::size_t words = (bytes + 7) / 8;
    const Hash128 pad = hash_pad(key);
    // The chunk roots over the leaves; an empty array has one chunk of padding alone.
    std::vector<Hash128> level(std::max<std::size_t>(1, (words + kHashChunk - 1) / kHashChunk));
    const auto* bytes_at = static_cast<const unsigned char*>(data);
    parallel_for(level.size(), kMinChunksPerPart, [&](std::size_t begin, std::size_t end) {
        for (std::size_t r = begin; r < end; ++r) {
            const std::size_t first = r * kHashChunk;
            level[r] = leaf_chunk_root(bytes_at, bytes, first, std::min(kHashChunk, words - first), key, pad);
        }
    });
    while (level.size() > 1) level = next_level(level, pad);
    return hash_combine(level[0], hash_leaf(bytes, kLengthIndex, key));
}

std::string to_hex(Hash128 h) {
    char text[33];
    std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(h.a),
                  static_cast<unsigned long long>(h.b));
    return text;
}

Hash128 hash_from_hex(const std::string& text) {
    if (text.size() != 32 || text.find_first_not_of("0123456789abcdef") != std::string::npos)
        throw std::invalid_argument("'" + text + "' is not a hash (32 lowercase hex digits)");
    return {std::stoull(text.substr(0, 16), nullptr, 16), std::stoull(text.substr(16), nullptr, 16)};
}

}  // namespace labkit
