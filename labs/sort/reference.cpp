// Lab sort's CPU reference: linked only into the trusted checker and the tests.
#include <array>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "labkit/parallel.hpp"
#include "problem.hpp"

namespace lab_sort {

namespace {

std::string at(const char* name, std::uint64_t i) { return std::string(name) + "[" + std::to_string(i) + "]"; }

// For a keys output: where the student's order first breaks, or, where it is ascending,
// that an element was lost, doubled or changed on the way.
std::function<std::string(const labkit::HostArray&, std::uint64_t)> explain_order(const char* name) {
    return [name](const labkit::HostArray& got, std::uint64_t) {
        const auto k = got.as<std::uint32_t>();
        for (std::uint64_t j = 1; j < k.size(); ++j)
            if (k[j - 1] > k[j])
                return "the order first breaks at " + at(name, j) + ": " + at(name, j - 1) + " = " +
                       std::to_string(k[j - 1]) + " > " + at(name, j) + " = " + std::to_string(k[j]);
        return std::string("the keys are in ascending order, so an element was lost, doubled or changed");
    };
}

// For the values of a pairs sort: whether the value at the first mismatch belongs to an
// equal key that came later in the input (stability broke) or to another key (the values
// did not move with their keys).
std::function<std::string(const labkit::HostArray&, std::uint64_t)> explain_stability(
    std::shared_ptr<const std::vector<std::uint32_t>> keys, std::shared_ptr<const std::vector<std::uint32_t>> values,
    std::shared_ptr<const std::vector<std::uint32_t>> order) {
    return [keys, values, order](const labkit::HostArray& got, std::uint64_t j) {
        std::unordered_map<std::uint32_t, std::uint64_t> position;  // value -> its input position
        for (std::uint64_t i = 0; i < values->size(); ++i) position.emplace((*values)[i], i);
        const std::uint32_t v = got.as<std::uint32_t>()[j];
        const std::uint64_t want = (*order)[j];
        const auto found = position.find(v);
        if (found == position.end()) return "pair_values[" + std::to_string(j) + "] = " + std::to_string(v) +
                                            " is no value of the input";
        const std::uint64_t from = found->second;
        const std::uint32_t key = (*keys)[want];
        if ((*keys)[from] == key)
            return "stability first breaks here: key " + std::to_string(key) + " is at input positions " +
                   std::to_string(want) + " and " + std::to_string(from) + ", and a stable sort keeps position " +
                   std::to_string(want) + "'s value (" + std::to_string((*values)[want]) + ") first";
        return "value " + std::to_string(v) + " belongs to key " + std::to_string((*keys)[from]) + " (input position " +
               std::to_string(from) + "), but the key here is " + std::to_string(key) +
               ": the values did not move with their keys";
    };
}

// ---- The stable sort: an LSD radix sort spread over the cores ------------------------
// Four passes of a counting sort, one per byte of the key from the lowest. Each pass is
// stable, so the whole sort is: equal keys keep their input order, which is exactly
// std::stable_sort's result (a keys-only sort's output is the same whatever the order of
// equal keys). A pass cuts the records into the same parts twice: first every part counts
// its records per byte value, then every part moves its records, in order, to places
// that start where the records of lower byte values, and of the same byte value in
// earlier parts, end. A byte that all keys share moves nothing and is skipped.

constexpr unsigned kDigitBits = 8;
constexpr std::size_t kBuckets = std::size_t(1) << kDigitBits;
constexpr unsigned kDigits = 32 / kDigitBits;
constexpr std::size_t kMinKeysPerPart = std::size_t(1) << 16;

using Counts = std::array<std::uint64_t, kBuckets>;

constexpr std::uint32_t digit_of(std::uint32_t key, unsigned digit) {
    return (key >> (digit * kDigitBits)) & (kBuckets - 1);
}

// The digits on which the keys differ, and every part's counts of each of them over the
// input order (the first pass's counts).
struct Digits {
    std::vector<unsigned> to_sort;
    std::vector<std::array<Counts, kDigits>> input_counts;  // [part][digit][bucket]
};

Digits count_digits(std::span<const std::uint32_t> keys, std::size_t parts) {
    Digits d;
    d.input_counts.assign(parts, {});
    labkit::run_parts(parts, [&](std::size_t part) {
        auto& counts = d.input_counts[part];
        const std::size_t end = labkit::part_begin(keys.size(), parts, part + 1);
        for (std::size_t i = labkit::part_begin(keys.size(), parts, part); i < end; ++i)
            for (unsigned digit = 0; digit < kDigits; ++digit) ++counts[digit][digit_of(keys[i], digit)];
    });
    for (unsigned digit = 0; digit < kDigits; ++digit) {
        bool shared = false;  // one byte value holds every key
        for (std::size_t bucket = 0; bucket < kBuckets && !shared; ++bucket) {
            std::uint64_t total = 0;
            for (const auto& counts : d.input_counts) total += counts[digit][bucket];
            shared = total == keys.size();
        }
        if (!shared) d.to_sort.push_back(digit);
    }
    return d;
}

// One stable counting-sort pass on `digit` over n records in `parts` parts: record i, whose
// key is key_at(i), goes to place move(i, place). counts[part] holds how many records of
// the part have each value of the digit.
template <class KeyAt, class Move>
void counting_pass(std::size_t n, std::size_t parts, unsigned digit, std::vector<Counts> counts, const KeyAt& key_at,
                   const Move& move) {
    std::uint64_t place = 0;  // each part's first place for each byte value, bucket by bucket
    for (std::size_t bucket = 0; bucket < kBuckets; ++bucket)
        for (auto& part_counts : counts) {
            const std::uint64_t count = part_counts[bucket];
            part_counts[bucket] = place;
            place += count;
        }
    labkit::run_parts(parts, [&](std::size_t part) {
        Counts& next = counts[part];
        const std::size_t end = labkit::part_begin(n, parts, part + 1);
        for (std::size_t i = labkit::part_begin(n, parts, part); i < end; ++i)
            move(i, next[digit_of(key_at(i), digit)]++);
    });
}

template <class KeyAt>
std::vector<Counts> count_pass(std::size_t n, std::size_t parts, unsigned digit, const KeyAt& key_at) {
    std::vector<Counts> counts(parts, Counts{});
    labkit::run_parts(parts, [&](std::size_t part) {
        const std::size_t end = labkit::part_begin(n, parts, part + 1);
        for (std::size_t i = labkit::part_begin(n, parts, part); i < end; ++i)
            ++counts[part][digit_of(key_at(i), digit)];
    });
    return counts;
}

std::vector<Counts> input_counts_of(const Digits& d, unsigned digit) {
    std::vector<Counts> counts;
    for (const auto& part : d.input_counts) counts.push_back(part[digit]);
    return counts;
}

// The radix sort of `keys`: place(j, key, position) is called once for every place j of
// the sorted order, with the key that goes there and its input position. With
// kCarryPositions the records are (key, input position) pairs; without, keys alone (and
// `position` means nothing). The first pass reads the input, the last calls `place`, those
// between go back and forth between two buffers.
template <bool kCarryPositions, class Place>
void radix_sort(std::span<const std::uint32_t> keys, const Place& place) {
    const std::size_t n = keys.size(), parts = labkit::parallel_parts(n, kMinKeysPerPart);
    const Digits d = count_digits(keys, parts);
    if (d.to_sort.empty()) {  // every key the same: the input order is the sorted order
        labkit::parallel_for(n, kMinKeysPerPart, [&](std::size_t begin, std::size_t end) {
            for (std::size_t i = begin; i < end; ++i) place(i, keys[i], static_cast<std::uint32_t>(i));
        });
        return;
    }
    // Every element of a buffer is written by a pass before it is read: they are not zeroed.
    std::array<std::unique_ptr<std::uint32_t[]>, 2> key_buffers, position_buffers;
    const auto buffer = [n] {
        auto b = std::make_unique_for_overwrite<std::uint32_t[]>(n);
        labkit::prefault(b.get(), n * sizeof(std::uint32_t));
        return b;
    };
    for (std::size_t b = 0; b + 1 < d.to_sort.size() && b < 2; ++b) {
        key_buffers[b] = buffer();
        if (kCarryPositions) position_buffers[b] = buffer();
    }
    const std::uint32_t* from_keys = keys.data();
    const std::uint32_t* from_positions = nullptr;  // the first pass's positions are i itself
    for (std::size_t pass = 0; pass < d.to_sort.size(); ++pass) {
        const unsigned digit = d.to_sort[pass];
        const auto key_at = [from_keys](std::size_t i) { return from_keys[i]; };
        const auto position_at = [from_positions](std::size_t i) {
            return from_positions ? from_positions[i] : static_cast<std::uint32_t>(i);
        };
        auto counts = pass == 0 ? input_counts_of(d, digit) : count_pass(n, parts, digit, key_at);
        if (pass + 1 == d.to_sort.size()) {
            counting_pass(n, parts, digit, std::move(counts), key_at, [&](std::size_t i, std::uint64_t j) {
                place(j, from_keys[i], kCarryPositions ? position_at(i) : 0u);
            });
            return;
        }
        std::uint32_t* to_keys = key_buffers[pass % 2].get();
        std::uint32_t* to_positions = position_buffers[pass % 2].get();
        counting_pass(n, parts, digit, std::move(counts), key_at, [&](std::size_t i, std::uint64_t j) {
            to_keys[j] = from_keys[i];
            if (kCarryPositions) to_positions[j] = position_at(i);
        });
        from_keys = to_keys;
        if (kCarryPositions) from_positions = to_positions;
    }
}

// The keys in ascending order, as the Expected values.
std::vector<double> sorted_keys(std::span<const std::uint32_t> keys) {
    std::vector<double> sorted = labkit::prefaulted_vector<double>(keys.size());
    radix_sort<false>(keys, [&](std::size_t j, std::uint32_t key, std::uint32_t) { sorted[j] = key; });
    return sorted;
}

// The stable order: the input positions, sorted by key, ties kept in input order.
std::vector<std::uint32_t> stable_order(std::span<const std::uint32_t> keys) {
    if (keys.size() > std::size_t{0xFFFFFFFFu})
        throw std::length_error("the sort reference numbers input positions with 32 bits: at most 2^32 - 1 keys");
    std::vector<std::uint32_t> order = labkit::prefaulted_vector<std::uint32_t>(keys.size());
    radix_sort<true>(keys, [&](std::size_t j, std::uint32_t, std::uint32_t position) { order[j] = position; });
    return order;
}

}  // namespace

std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs) {
    const auto keys = inputs.at(0).as<std::uint32_t>();
    const std::uint64_t n = keys.size();
    std::vector<labkit::Expected> expected;
    if (spec.param("keys")) {
        expected.push_back({"keys", {n}, sorted_keys(keys), {}});
        expected.back().explain = explain_order("keys");
    }
    if (spec.param("pairs")) {
        const auto values = inputs.at(1).as<std::uint32_t>();
        std::vector<std::uint32_t> order = stable_order(keys);
        labkit::Expected out_keys{"pair_keys", {n}, labkit::prefaulted_vector<double>(n), {}};
        labkit::Expected out_values{"pair_values", {n}, labkit::prefaulted_vector<double>(n), {}};
        labkit::parallel_for(n, kMinKeysPerPart, [&](std::size_t begin, std::size_t end) {
            for (std::size_t j = begin; j < end; ++j) {
                out_keys.values[j] = keys[order[j]];
                out_values.values[j] = values[order[j]];
            }
        });
        out_keys.explain = explain_order("pair_keys");
        out_values.explain = explain_stability(std::make_shared<const std::vector<std::uint32_t>>(keys.begin(), keys.end()),
                                               std::make_shared<const std::vector<std::uint32_t>>(values.begin(), values.end()),
                                               std::make_shared<const std::vector<std::uint32_t>>(std::move(order)));
        expected.push_back(std::move(out_keys));
        expected.push_back(std::move(out_values));
    }
    return expected;
}

}  // namespace lab_sort
