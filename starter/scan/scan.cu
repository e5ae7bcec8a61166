// Lab scan: inclusive and exclusive prefix sums of any length.
//
// What you practise here (lecture 4): a block scan (Hillis-Steele-Horn, then the
// work-efficient Blelloch scan), turning it into a scan of a vector of any length with
// the large-vector scheme (block scan, scan of the block sums, add back), and the
// exclusive variant. Lecture 9 explains why the float results may differ from the CPU's
// in the last bits, and by how much they may (the handout gives the tolerance).
//
// Float addition is not associative, so combine the block sums as a tree (a scan of the
// block sums), not as a carry passed from one small block to the next: such a chain
// rounds once per block, and when blocks take their carries in whatever order they run,
// the answer changes from run to run (the checker runs every float case twice and
// grades the worse run).
//
// Build and run:   cudalab run scan .          (checks every test case)
//                  cudalab run scan . --bench  (times it against the copy roof)

#include "labkit/check.hpp"
#include "scan.hpp"

namespace {

// Start with the large-vector scheme of lecture 4 (TODOs 1-4). The course reference
// goes further: one pass over the data, with "decoupled look-back" between blocks
// (see the handout), but get this right first.

// TODO 1 (block scan): each block scans its own segment of the vector.
// Copy the segment into shared memory, scan it there, copy it back to out:
//   * first try the Hillis Steele Horn scan, with its two bugs fixed: double
//     buffer XY (read one half, write the other) and keep __syncthreads() outside
//     the `if`, so that all threads execute ALL iterations;
//   * then the Blelloch scan (reduction phase, then distribution phase), with twice
//     as many elements as threads.
// Elements past n count as 0. For the exclusive scan, each element takes its left
// neighbour's result (0 for the first) -- do not shift the inclusive result in a
// second pass. If block_sums is not null, also write the segment's total (its
// inclusive sum) to block_sums[blockIdx.x]: the lecture's extract_sum, merged in.
template <typename T>
__global__ void block_scan(const T* in, T* out, std::size_t n, bool exclusive, T* block_sums) {
    // your code here
}

// TODO 2 (add back): add scanned_block_sums[b - 1], the sum of every element before
// segment b, to every element of segment b, for b = 1, 2, ... (the lecture's block_add).
template <typename T>
__global__ void block_add(T* out, std::size_t n, const T* scanned_block_sums) {
    // your code here
}

template <typename T>
void scan(const T* in, T* out, std::size_t n, bool exclusive, void* workspace) {
    // TODO 3 (the whole scan), with blocks = the number of segments of n elements:
    //   1. block_scan<<<blocks, threads>>>(in, out, n, exclusive, block_sums);
    //   2. scan the block sums, inclusive and in place. When there are more block sums
    //      than one block can scan, that is the same problem again one level up:
    //      call scan() on them (for n above segment^2 this is the lecture's 3-level scan);
    //   3. block_add<<<blocks - 1, threads>>>(out, n, block_sums).
    // With one block, step 1 alone is the answer (pass block_sums = nullptr).
    // block_sums live in workspace, one level after another (TODO 4 sizes it).
    // Check every launch with LABKIT_CHECK_LAUNCH(). Do not allocate memory or
    // synchronise with the host in here.
    (void)in; (void)out; (void)n; (void)exclusive; (void)workspace;
}

}  // namespace

std::size_t scan_workspace_bytes(std::size_t n) {
    // TODO 4: the bytes of workspace your scan needs for n elements: room for the
    // block sums of every level (n / segment, then that / segment, ... until one).
    (void)n;
    return 0;
}

void scan_inclusive(const float* in, float* out, std::size_t n, void* workspace) {
    scan(in, out, n, false, workspace);
}
void scan_exclusive(const float* in, float* out, std::size_t n, void* workspace) {
    scan(in, out, n, true, workspace);
}
void scan_inclusive_int(const int* in, int* out, std::size_t n, void* workspace) {
    scan(in, out, n, false, workspace);
}
void scan_exclusive_int(const int* in, int* out, std::size_t n, void* workspace) {
    scan(in, out, n, true, workspace);
}
