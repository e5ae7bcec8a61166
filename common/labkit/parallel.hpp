// Spreading the trusted checker's CPU work (input generation, the labs' references, the
// comparison, the output hash) over the cores. A checker runs inside the grader's sandbox,
// whose process limit (256 tasks) is shared by up to six checkers at once, so no parallel
// loop here starts more than kMaxWorkerThreads threads, however many cores the machine has.
//
// Work is cut into `parts`: contiguous ranges of [0, n), in order, each run on its own
// thread. Which part an element falls in follows from (n, parts) alone (part_begin), so a
// computation in several passes (a blocked scan, a radix sort) can give each part the same
// range in every pass, and a result that depends on the split (a per-part total) is the
// same on every run with the same number of parts.
#pragma once

#include <cstddef>
#include <vector>

namespace labkit {

// The most threads one parallel loop starts (the calling thread counts as one of them).
inline constexpr std::size_t kMaxWorkerThreads = 32;

// The threads a parallel loop may use: the CPUs this process may run on (its affinity
// mask, which a container's cpuset narrows), at most kMaxWorkerThreads, at least 1.
std::size_t worker_threads();

// How many parts to cut n items into so that each holds at least min_per_part of them
// (an item being whatever the caller counts: elements, rows, multiply-adds): between 1 and
// worker_threads(). 1 when n < 2 * min_per_part, so small work stays on the calling thread.
std::size_t parallel_parts(std::size_t n, std::size_t min_per_part);

// The first item of part `part` when [0, n) is cut into `parts` ranges of sizes differing
// by at most one; part_begin(n, parts, parts) == n. Some parts are empty when n < parts.
constexpr std::size_t part_begin(std::size_t n, std::size_t parts, std::size_t part) {
    const std::size_t size = n / parts, larger = n % parts;
    return part * size + (part < larger ? part : larger);
}

// Runs body(part, context) for every part in [0, parts), each on a thread of its own (the
// calling thread runs part 0), and returns when all are done. A part whose thread cannot
// be started (the sandbox's process limit reached) runs on the calling thread instead. An
// exception thrown by a body is rethrown here once every part has finished (that of the
// lowest part, where several threw).
void run_parts(std::size_t parts, void (*body)(std::size_t part, void* context), void* context);

// The same with any callable body(part).
template <class Body> void run_parts(std::size_t parts, const Body& body) {
    run_parts(parts, [](std::size_t part, void* context) { (*static_cast<const Body*>(context))(part); },
              const_cast<void*>(static_cast<const void*>(&body)));
}

// body(begin, end) over the parts of [0, n) that parallel_parts(n, min_per_part) gives.
template <class Body> void parallel_for(std::size_t n, std::size_t min_per_part, const Body& body) {
    const std::size_t parts = parallel_parts(n, min_per_part);
    run_parts(parts, [&](std::size_t part) {
        const std::size_t begin = part_begin(n, parts, part), end = part_begin(n, parts, part + 1);
        if (begin < end) body(begin, end);
    });
}

// Runs body(begin, end, context) over [0, n) in parts of at least 2^20 items (one part
// when n is small). Deterministic whenever body writes only its own range.
void parallel_for_ranges(std::size_t n, void (*body)(std::size_t, std::size_t, void*), void* context);

// Asks the kernel to map the pages of [data, data + bytes) now, spread over the cores, so
// that the first writes to a large new buffer (a gigabyte for a bench case) do not fault
// page by page on one thread. A hint with no effect on what the memory holds: nothing
// happens for a small buffer or where the kernel cannot (before Linux 5.14, elsewhere).
void prefault(void* data, std::size_t bytes);

// v, empty, resized to n value-initialised (zero) elements whose pages prefault mapped first.
template <class T> void resize_prefaulted(std::vector<T>& v, std::size_t n) {
    v.reserve(n);
    prefault(v.data(), n * sizeof(T));
    v.resize(n);
}

// n value-initialised (zero) elements, their pages mapped by prefault first.
template <class T> std::vector<T> prefaulted_vector(std::size_t n) {
    std::vector<T> v;
    resize_prefaulted(v, n);
    return v;
}

// For tests: while one is alive, parallel_parts() answers `parts` whatever the work and
// the machine (even more parts than items, so that some are empty), so that a test on a
// small input and a machine of few cores takes the paths a many-core machine takes.
// Not for concurrent use: tests set it from one thread, around the call they test.
class ForcedPartsForTesting {
  public:
    explicit ForcedPartsForTesting(std::size_t parts);
    ~ForcedPartsForTesting();
    ForcedPartsForTesting(const ForcedPartsForTesting&) = delete;
    ForcedPartsForTesting& operator=(const ForcedPartsForTesting&) = delete;

  private:
    std::size_t previous_;
};

}  // namespace labkit
