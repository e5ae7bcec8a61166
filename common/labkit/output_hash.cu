// The GPU side of labkit/output_hash.hpp: the same leaves, chunk trees and levels as
// hash_bytes_on_host, one block per chunk. Runs outside the timed region.
#include "labkit/check.hpp"
#include "labkit/device.hpp"
#include "labkit/output_hash.hpp"

namespace labkit {
namespace {

constexpr int kHashThreads = 256;
constexpr int kValuesPerThread = static_cast<int>(kHashChunk) / kHashThreads;  // 8, reduced in registers first
static_assert(kHashChunk % kHashThreads == 0 && (kValuesPerThread & (kValuesPerThread - 1)) == 0);

// The adjacent-pair tree of one chunk: each thread reduces its kValuesPerThread
// neighbours, then the block reduces its threads' values pairwise in shared memory;
// together that is exactly the balanced tree over the chunk's kHashChunk values.
template <class ValueAt>
__device__ void reduce_chunk(ValueAt value_at, std::uint64_t count, Hash128 pad, Hash128* out) {
    __shared__ Hash128 node[kHashThreads];
    const std::uint64_t chunk_first = static_cast<std::uint64_t>(blockIdx.x) * kHashChunk;
    Hash128 v[kValuesPerThread];
#pragma unroll
    for (int k = 0; k < kValuesPerThread; ++k) {
        const std::uint64_t i = chunk_first + static_cast<std::uint64_t>(threadIdx.x) * kValuesPerThread + k;
        v[k] = i < count ? value_at(i) : pad;
    }
#pragma unroll
    for (int width = kValuesPerThread; width > 1; width /= 2)
#pragma unroll
        for (int j = 0; j < width / 2; ++j) v[j] = hash_combine(v[2 * j], v[2 * j + 1]);
    node[threadIdx.x] = v[0];
    __syncthreads();
    for (int width = kHashThreads; width > 1; width /= 2) {
        Hash128 combined;
        if (threadIdx.x < width / 2) combined = hash_combine(node[2 * threadIdx.x], node[2 * threadIdx.x + 1]);
        __syncthreads();
        if (threadIdx.x < width / 2) node[threadIdx.x] = combined;
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = node[0];
}

__global__ void hash_leaves_kernel(const unsigned char* data, std::uint64_t bytes, Hash128 key, Hash128* roots) {
    const std::uint64_t words = (bytes + 7) / 8;
    reduce_chunk(
        [&](std::uint64_t i) {
            std::uint64_t word = 0;
            const std::uint64_t first = 8 * i;
            if (first + 8 <= bytes && (reinterpret_cast<std::uintptr_t>(data) % 8) == 0) {
                word = reinterpret_cast<const std::uint64_t*>(data)[i];
            } else {
                for (std::uint64_t b = 0; b < 8 && first + b < bytes; ++b)
                    word |= static_cast<std::uint64_t>(data[first + b]) << (8 * b);
            }
            return hash_leaf(word, i, key);
        },
        words, hash_pad(key), roots);
}

__global__ void hash_level_kernel(const Hash128* values, std::uint64_t count, Hash128 pad, Hash128* roots) {
    reduce_chunk([&](std::uint64_t i) { return values[i]; }, count, pad, roots);
}

__global__ void hash_finish_kernel(const Hash128* root, std::uint64_t bytes, Hash128 key, Hash128* out) {
    *out = hash_combine(*root, hash_leaf(bytes, kLengthIndex, key));
}

std::uint64_t chunks_for(std::uint64_t values) { return (values + kHashChunk - 1) / kHashChunk; }

}  // namespace

namespace {
std::size_t level_a_bytes(std::size_t max_bytes) {
    return sizeof(Hash128) * std::max<std::uint64_t>(1, chunks_for((max_bytes + 7) / 8));
}
std::size_t level_b_bytes(std::size_t max_bytes) {
    return sizeof(Hash128) * std::max<std::uint64_t>(1, chunks_for(chunks_for((max_bytes + 7) / 8)));
}
}  // namespace

DeviceHasher::DeviceHasher(std::size_t max_bytes)
    : level_a_(level_a_bytes(max_bytes)), level_b_(level_b_bytes(max_bytes)), result_(sizeof(Hash128)) {}

std::size_t DeviceHasher::scratch_bytes(std::size_t max_bytes) {
    return level_a_bytes(max_bytes) + level_b_bytes(max_bytes) + sizeof(Hash128);
}

Hash128 DeviceHasher::hash(const DeviceArray& array, Hash128 key) {
    const std::uint64_t bytes = array.bytes();
    if (bytes > max_bytes()) throw std::logic_error("DeviceHasher was made for smaller arrays");
    const std::uint64_t words = (bytes + 7) / 8;
    auto* a = static_cast<Hash128*>(level_a_.data());
    auto* b = static_cast<Hash128*>(level_b_.data());
    // An empty array is one padding leaf, as on the host.
    std::uint64_t count = chunks_for(std::max<std::uint64_t>(words, 1));
    hash_leaves_kernel<<<static_cast<unsigned>(count), kHashThreads>>>(static_cast<const unsigned char*>(array.data()),
                                                                        bytes, key, a);
    LABKIT_CHECK_LAUNCH();
    while (count > 1) {
        const std::uint64_t next = chunks_for(count);
        hash_level_kernel<<<static_cast<unsigned>(next), kHashThreads>>>(a, count, hash_pad(key), b);
        LABKIT_CHECK_LAUNCH();
        std::swap(a, b);
        count = next;
    }
    hash_finish_kernel<<<1, 1>>>(a, bytes, key, static_cast<Hash128*>(result_.data()));
    LABKIT_CHECK_LAUNCH();
    Hash128 h;
    LABKIT_CHECK(cudaMemcpy(&h, result_.data(), sizeof h, cudaMemcpyDeviceToHost));
    return h;
}

std::size_t DeviceHasher::max_bytes() const {
    return level_a_.bytes() / sizeof(Hash128) * kHashChunk * 8;
}

}  // namespace labkit
