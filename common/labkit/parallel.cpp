#include "labkit/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#include <sys/mman.h>
#endif

namespace labkit {
namespace {

std::atomic<std::size_t> forced_parts{0};  // 0: none (ForcedPartsForTesting)

std::size_t usable_cpus() {
    std::size_t cpus = std::thread::hardware_concurrency();
#if defined(__linux__)
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof mask, &mask) == 0) {
        const int allowed = CPU_COUNT(&mask);
        if (allowed > 0 && (cpus == 0 || static_cast<std::size_t>(allowed) < cpus))
            cpus = static_cast<std::size_t>(allowed);
    }
#endif
    return std::max<std::size_t>(1, cpus);
}

}  // namespace

std::size_t worker_threads() {
    static const std::size_t threads = std::min(usable_cpus(), kMaxWorkerThreads);
    return threads;
}

std::size_t parallel_parts(std::size_t n, std::size_t min_per_part) {
    if (const std::size_t forced = forced_parts.load(std::memory_order_relaxed)) return forced;
    const std::size_t by_size = n / std::max<std::size_t>(1, min_per_part);
    return std::clamp<std::size_t>(by_size, 1, worker_threads());
}

void run_parts(std::size_t parts, void (*body)(std::size_t, void*), void* context) {
    if (parts == 0) return;
    std::vector<std::exception_ptr> errors(parts);
    const auto run = [&](std::size_t part) {
        try {
            body(part, context);
        } catch (...) {
            errors[part] = std::current_exception();
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(parts - 1);
    std::size_t started = 1;  // parts [1, started) have threads
    try {
        for (; started < parts; ++started) pool.emplace_back(run, started);
    } catch (const std::system_error&) {
        // No more threads to be had: the calling thread takes the rest below.
    }
    run(0);
    for (std::size_t part = started; part < parts; ++part) run(part);
    for (auto& thread : pool) thread.join();
    for (const auto& error : errors)
        if (error) std::rethrow_exception(error);
}

void parallel_for_ranges(std::size_t n, void (*body)(std::size_t, std::size_t, void*), void* context) {
    constexpr std::size_t kMinPerPart = std::size_t(1) << 20;
    struct Job {
        std::size_t n, parts;
        void (*body)(std::size_t, std::size_t, void*);
        void* context;
    } job{n, parallel_parts(n, kMinPerPart), body, context};
    if (job.parts == 1) {
        body(0, n, context);
        return;
    }
    run_parts(job.parts, [](std::size_t part, void* p) {
        const auto& j = *static_cast<const Job*>(p);
        const std::size_t begin = part_begin(j.n, j.parts, part), end = part_begin(j.n, j.parts, part + 1);
        if (begin < end) j.body(begin, end, j.context);
    }, &job);
}

void prefault(void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    constexpr std::size_t kPage = 4096, kMinBytesPerPart = std::size_t(1) << 25;
    if (bytes < kMinBytesPerPart) return;
    // Whole pages inside the buffer only: a partial page at either end may hold another
    // object's bytes, and faults in with the first write to it.
    const auto first = (reinterpret_cast<std::uintptr_t>(data) + kPage - 1) / kPage * kPage;
    const auto last = (reinterpret_cast<std::uintptr_t>(data) + bytes) / kPage * kPage;
    if (first >= last) return;
    const std::size_t pages = (last - first) / kPage;
    const std::size_t parts = parallel_parts(last - first, kMinBytesPerPart);
    run_parts(parts, [&](std::size_t part) {
        const std::size_t begin = part_begin(pages, parts, part), end = part_begin(pages, parts, part + 1);
        if (begin < end)  // a refusal (an old kernel, no memory yet) leaves the pages to fault in as written
            (void)madvise(reinterpret_cast<void*>(first + begin * kPage), (end - begin) * kPage, MADV_POPULATE_WRITE);
    });
#else
    (void)data;
    (void)bytes;
#endif
}

ForcedPartsForTesting::ForcedPartsForTesting(std::size_t parts)
    : previous_(forced_parts.exchange(std::max<std::size_t>(1, parts))) {}

ForcedPartsForTesting::~ForcedPartsForTesting() { forced_parts.store(previous_); }

}  // namespace labkit
