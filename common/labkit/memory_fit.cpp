#include "labkit/memory_fit.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace labkit {

namespace {

std::size_t add(std::size_t a, std::size_t b) {
    return a > std::numeric_limits<std::size_t>::max() - b ? std::numeric_limits<std::size_t>::max() : a + b;
}

}  // namespace

std::size_t CaseMemory::peak() const {
    const std::size_t with_case = add(add(add(inputs, run.outputs), run.workspace), run.library);
    return std::max(with_case, copy_baseline);
}

std::size_t copy_baseline_half_bytes(double bytes_moved) {
    return (static_cast<std::size_t>(bytes_moved / 2) + 255) / 256 * 256;
}

MemoryFit check_memory_fit(std::size_t needed, std::size_t free_bytes) {
    MemoryFit fit;
    fit.needed = needed;
    fit.free = free_bytes;
    fit.with_margin = add(add(needed, needed / 100 * kMemoryMarginPercent), kMemoryMarginBytes);
    fit.fits = fit.with_margin <= free_bytes;
    return fit;
}

std::string bytes_text(std::size_t bytes) {
    constexpr double kib = 1024.0, mib = kib * 1024.0, gib = mib * 1024.0;
    const double b = static_cast<double>(bytes);
    char text[48];
    if (b >= gib) std::snprintf(text, sizeof text, "%.1f GiB", b / gib);
    else if (b >= mib) std::snprintf(text, sizeof text, "%.0f MiB", b / mib);
    else if (b >= kib) std::snprintf(text, sizeof text, "%.0f KiB", b / kib);
    else std::snprintf(text, sizeof text, "%zu bytes", bytes);
    return text;
}

std::string describe_memory_shortfall(const MemoryFit& fit, const std::string& device_name) {
    return "needs about " + bytes_text(fit.needed) + " of GPU memory (" + bytes_text(fit.with_margin) +
           " with a safety margin), " + bytes_text(fit.free) + " free on " + device_name;
}

std::string describe_case_memory(const CaseMemory& memory) {
    std::string text;
    const auto part = [&](const char* name, std::size_t bytes) {
        if (bytes) text += (text.empty() ? "" : ", ") + std::string(name) + " " + bytes_text(bytes);
    };
    part("inputs", memory.inputs);
    part("outputs", memory.run.outputs);
    part("workspace", memory.run.workspace);
    part("library scratch", memory.run.library);
    part("copy baseline (after the case)", memory.copy_baseline);
    return text.empty() ? "nothing" : text;
}

}  // namespace labkit
