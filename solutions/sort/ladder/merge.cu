// Lab sort, ladder rung: merge sort, after lecture 8's three stages. Stage 1: each thread
// sorts a run of 8 keys on its own (many tiny sorts, one per thread). Then runs are merged
// pairwise, doubling in length, until one is left; every merge is spread over one thread
// per element, so the same kernel serves the many small merges of the early passes and the
// few large ones at the end (where a block per merge would leave SMs idle): an element of
// the left run at position p goes to p + (keys of the right run smaller than it), an element
// of the right run at q to q + (keys of the left run smaller or equal), each count a binary
// search. Taking the left run's key first on ties keeps the sort stable.
#include <cstdint>

#include "labkit/check.hpp"
#include "sort.hpp"

namespace {

constexpr int kThreadsPerBlock = 256;
constexpr int kRun = 8;

template <bool kWithValues>
__global__ void sort_runs_kernel(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                                 std::uint32_t* values_out, std::size_t n) {
    const std::size_t begin = (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kRun;
    if (begin >= n) return;
    const int count = static_cast<int>(n - begin < kRun ? n - begin : kRun);
    std::uint32_t k[kRun], v[kRun];
    for (int i = 0; i < count; ++i) {  // insertion sort: stable, only a greater key moves right
        const std::uint32_t key = keys_in[begin + i];
        const std::uint32_t value = kWithValues ? values_in[begin + i] : 0u;
        int j = i;
        while (j > 0 && k[j - 1] > key) {
            k[j] = k[j - 1];
            v[j] = v[j - 1];
            --j;
        }
        k[j] = key;
        v[j] = value;
    }
    for (int i = 0; i < count; ++i) {
        keys_out[begin + i] = k[i];
        if constexpr (kWithValues) values_out[begin + i] = v[i];
    }
}

// How many of run[0..length) are < key (strict) or <= key (inclusive).
template <bool kInclusive>
__device__ std::size_t rank_in(const std::uint32_t* run, std::size_t length, std::uint32_t key) {
    std::size_t lo = 0, hi = length;
    while (lo < hi) {
        const std::size_t mid = (lo + hi) / 2;
        if (kInclusive ? run[mid] <= key : run[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

template <bool kWithValues>
__global__ void merge_kernel(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                             std::uint32_t* values_out, std::size_t n, std::size_t width) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const std::size_t left = i / (2 * width) * (2 * width);
    const std::size_t mid = left + width < n ? left + width : n;
    const std::size_t right_end = mid + width < n ? mid + width : n;
    const std::uint32_t key = keys_in[i];
    std::size_t to;
    if (i < mid) to = i + rank_in<false>(keys_in + mid, right_end - mid, key);
    else to = left + (i - mid) + rank_in<true>(keys_in + left, mid - left, key);
    keys_out[to] = key;
    if constexpr (kWithValues) values_out[to] = values_in[i];
}

template <bool kWithValues>
void merge_sort(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                std::uint32_t* values_out, std::size_t n, void* workspace) {
    if (n == 0) return;
    auto* tmp_keys = static_cast<std::uint32_t*>(workspace);
    std::uint32_t* tmp_values = tmp_keys + n;
    const auto run_blocks = static_cast<unsigned>(((n + kRun - 1) / kRun + kThreadsPerBlock - 1) / kThreadsPerBlock);
    sort_runs_kernel<kWithValues><<<run_blocks, kThreadsPerBlock>>>(keys_in, values_in, keys_out, values_out, n);
    LABKIT_CHECK_LAUNCH();
    const auto blocks = static_cast<unsigned>((n + kThreadsPerBlock - 1) / kThreadsPerBlock);
    std::uint32_t *src_k = keys_out, *src_v = values_out, *dst_k = tmp_keys, *dst_v = tmp_values;
    for (std::size_t width = kRun; width < n; width *= 2) {
        merge_kernel<kWithValues><<<blocks, kThreadsPerBlock>>>(src_k, src_v, dst_k, dst_v, n, width);
        LABKIT_CHECK_LAUNCH();
        std::swap(src_k, dst_k);
        std::swap(src_v, dst_v);
    }
    if (src_k != keys_out) {
        LABKIT_CHECK(cudaMemcpyAsync(keys_out, src_k, n * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice));
        if (kWithValues)
            LABKIT_CHECK(cudaMemcpyAsync(values_out, src_v, n * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice));
    }
}

}  // namespace

std::size_t sort_workspace_bytes(std::size_t n) { return 2 * n * sizeof(std::uint32_t); }

void sort_keys(const std::uint32_t* keys_in, std::uint32_t* keys_out, std::size_t n, void* workspace) {
    merge_sort<false>(keys_in, nullptr, keys_out, nullptr, n, workspace);
}

void sort_pairs(const std::uint32_t* keys_in, const std::uint32_t* values_in, std::uint32_t* keys_out,
                std::uint32_t* values_out, std::size_t n, void* workspace) {
    merge_sort<true>(keys_in, values_in, keys_out, values_out, n, workspace);
}
