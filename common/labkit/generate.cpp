#include "labkit/generate.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

namespace labkit {

void parallel_for_ranges(std::size_t n, void (*body)(std::size_t, std::size_t, void*), void* context) {
    constexpr std::size_t kMinPerThread = std::size_t(1) << 20;
    const std::size_t hw = std::max(1u, std::thread::hardware_concurrency());
    const std::size_t threads = std::min(hw, std::max<std::size_t>(1, n / kMinPerThread));
    if (threads <= 1) {
        body(0, n, context);
        return;
    }
    std::vector<std::thread> pool;
    const std::size_t chunk = (n + threads - 1) / threads;
    for (std::size_t t = 0; t < threads; ++t) {
        const std::size_t begin = t * chunk, end = std::min(n, begin + chunk);
        if (begin < end) pool.emplace_back(body, begin, end, context);
    }
    for (auto& th : pool) th.join();
}

void fill_uniform(std::span<float> out, std::uint64_t seed, std::uint64_t stream, float lo, float hi) {
    if (!(lo < hi)) throw std::invalid_argument("fill_uniform needs lo < hi");
    struct Ctx { float* data; std::uint64_t seed, stream; double lo, width; float hi; } ctx{
        out.data(), seed, stream, lo, static_cast<double>(hi) - lo, hi};
    parallel_for_ranges(out.size(), [](std::size_t b, std::size_t e, void* p) {
        auto& c = *static_cast<Ctx*>(p);
        for (std::size_t i = b; i < e; ++i) {
            const float v = static_cast<float>(c.lo + c.width * random_unit(c.seed, c.stream, i));
            c.data[i] = v < c.hi ? v : std::nextafter(c.hi, c.lo);  // rounding may reach hi
        }
    }, &ctx);
}

void fill_uniform_int(std::span<std::int32_t> out, std::uint64_t seed, std::uint64_t stream,
                      std::int32_t lo, std::int32_t hi) {
    if (lo > hi) throw std::invalid_argument("fill_uniform_int needs lo <= hi");
    struct Ctx { std::int32_t* data; std::uint64_t seed, stream; std::int64_t lo; std::uint64_t span; } ctx{
        out.data(), seed, stream, lo, static_cast<std::uint64_t>(std::int64_t(hi) - lo + 1)};
    parallel_for_ranges(out.size(), [](std::size_t b, std::size_t e, void* p) {
        auto& c = *static_cast<Ctx*>(p);
        for (std::size_t i = b; i < e; ++i)
            c.data[i] = static_cast<std::int32_t>(c.lo + static_cast<std::int64_t>(
                                                             random_bits(c.seed, c.stream, i) % c.span));
    }, &ctx);
}

}  // namespace labkit
