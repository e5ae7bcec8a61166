// Tests of labkit/output_hash.hpp on the CPU: the hash binds every byte, its position,
// the length and the key, and survives a round trip through hex. (The GPU computes the
// same function: tests/test_device_inputs_gpu.cu compares the two.)
#include <doctest/doctest.h>

#include <numeric>
#include <utility>
#include <vector>

#include "labkit/output_hash.hpp"
#include "labkit/parallel.hpp"

namespace {
labkit::Hash128 hash_of(const std::vector<std::uint8_t>& bytes, labkit::Hash128 key = {1, 2}) {
    return labkit::hash_bytes_on_host(bytes.data(), bytes.size(), key);
}
}  // namespace

TEST_CASE("test_output_hash_changes_with_every_byte_and_position") {
    std::vector<std::uint8_t> bytes(3 * labkit::kHashChunk * 8 + 5);  // several chunks and a ragged tail
    std::iota(bytes.begin(), bytes.end(), std::uint8_t{0});
    const auto base = hash_of(bytes);
    CHECK(base == hash_of(bytes));
    for (std::size_t i : {std::size_t(0), std::size_t(7), std::size_t(8), bytes.size() / 2, bytes.size() - 1}) {
        auto changed = bytes;
        changed[i] ^= 1;
        CHECK_FALSE(hash_of(changed) == base);
    }
    auto swapped = bytes;
    std::swap(swapped[0], swapped[8]);  // the same words in another order
    CHECK_FALSE(hash_of(swapped) == base);
    CHECK_FALSE(hash_of(bytes, {1, 3}) == base);  // another key
}

TEST_CASE("test_output_hash_binds_the_length") {
    CHECK_FALSE(hash_of({}) == hash_of({0}));
    CHECK_FALSE(hash_of({1, 0}) == hash_of({1}));  // zero padding alone does not make two arrays equal
    std::vector<std::uint8_t> one_chunk(labkit::kHashChunk * 8, 7), one_more(labkit::kHashChunk * 8 + 8, 7);
    CHECK_FALSE(hash_of(one_chunk) == hash_of(one_more));
}

TEST_CASE("test_output_hash_hex_round_trip") {
    const labkit::Hash128 h{0x0123456789abcdefull, 0xfedcba9876543210ull};
    CHECK(labkit::to_hex(h) == "0123456789abcdeffedcba9876543210");
    CHECK(labkit::hash_from_hex(labkit::to_hex(h)) == h);
    CHECK_THROWS(labkit::hash_from_hex("0123"));
    CHECK_THROWS(labkit::hash_from_hex("0123456789ABCDEFfedcba9876543210"));
}

TEST_CASE("test_output_hash_known_values_on_any_number_of_threads") {
    // The definition pinned by values the harness and the checker agreed on before the
    // checker made its leaves chunk by chunk: empty, one level of chunks with a ragged
    // tail, and three levels (2^22 + 1 words).
    const std::pair<std::size_t, const char*> known[] = {{0, "15f4ce565a12715d9075b9ec916c8543"},
                                                         {49157, "6228c2c9b1f84f8bdf8806df15a4e168"},
                                                         {2048 * 2048 * 8 + 9, "49d856b15f90bb597f04a3a6920a0ca8"}};
    for (const auto& [size, hex] : known) {
        std::vector<std::uint8_t> bytes(size);
        for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>((i * 31 + 7) & 0xFF);
        for (std::size_t parts : {1, 3, 32}) {
            const labkit::ForcedPartsForTesting forced(parts);
            CHECK_MESSAGE(labkit::to_hex(hash_of(bytes)) == hex, size << " bytes in " << parts << " parts");
        }
    }
}
