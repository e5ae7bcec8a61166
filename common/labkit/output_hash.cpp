#include "labkit/output_hash.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace labkit {
namespace {

// The balanced adjacent-pair tree over one chunk, padded to kHashChunk values.
Hash128 chunk_root(const Hash128* values, std::size_t count, Hash128 pad) {
    Hash128 level[kHashChunk];
    for (std::size_t i = 0; i < kHashChunk; ++i) level[i] = i < count ? values[i] : pad;
    for (std::size_t width = kHashChunk; width > 1; width /= 2)
        for (std::size_t j = 0; j < width / 2; ++j) level[j] = hash_combine(level[2 * j], level[2 * j + 1]);
    return level[0];
}

std::vector<Hash128> next_level(const std::vector<Hash128>& values, Hash128 pad) {
    std::vector<Hash128> roots((values.size() + kHashChunk - 1) / kHashChunk);
    struct Ctx { const std::vector<Hash128>* values; std::vector<Hash128>* roots; Hash128 pad; } ctx{&values, &roots, pad};
    parallel_for_ranges(roots.size(), [](std::size_t b, std::size_t e, void* p) {
        auto& c = *static_cast<Ctx*>(p);
        for (std::size_t r = b; r < e; ++r) {
            const std::size_t first = r * kHashChunk;
            (*c.roots)[r] = chunk_root(c.values->data() + first, std::min(kHashChunk, c.values->size() - first), c.pad);
        }
    }, &ctx);
    return roots;
}

}  // namespace

Hash128 hash_bytes_on_host(const void* data, std::size_t bytes, Hash128 key) {
    const std::size_t words = (bytes + 7) / 8;
    std::vector<Hash128> level(std::max<std::size_t>(words, 1));
    struct Ctx { const unsigned char* data; std::size_t bytes; Hash128 key; Hash128* out; } ctx{
        static_cast<const unsigned char*>(data), bytes, key, level.data()};
    parallel_for_ranges(words, [](std::size_t b, std::size_t e, void* p) {
        auto& c = *static_cast<Ctx*>(p);
        for (std::size_t i = b; i < e; ++i) {
            std::uint64_t word = 0;
            std::memcpy(&word, c.data + 8 * i, std::min<std::size_t>(8, c.bytes - 8 * i));  // little-endian, zero-padded
            c.out[i] = hash_leaf(word, i, c.key);
        }
    }, &ctx);
    if (words == 0) level[0] = hash_pad(key);  // an empty array: one padding leaf
    const Hash128 pad = hash_pad(key);
    do level = next_level(level, pad);
    while (level.size() > 1);
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
