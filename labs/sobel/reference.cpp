// Lab sobel's CPU reference: linked only into the trusted checker and the tests.
#include <algorithm>
#include <memory>
#include <string>

#include "labkit/parallel.hpp"
#include "problem.hpp"

namespace lab_sobel {

namespace {

// A part of the image's rows takes at least this many pixels.
constexpr std::size_t kMinPixelsPerPart = std::size_t(1) << 18;

}  // namespace

std::int64_t magnitude_squared(const std::uint8_t* u, std::uint64_t width, std::uint64_t x, std::uint64_t y) {
    const auto at = [&](std::uint64_t yy, std::uint64_t xx) { return static_cast<std::int64_t>(u[yy * width + xx]); };
    const std::int64_t sum1 = at(y - 1, x + 1) - at(y - 1, x - 1) + 2 * at(y, x + 1) - 2 * at(y, x - 1) +
                              at(y + 1, x + 1) - at(y + 1, x - 1);
    const std::int64_t sum2 = at(y - 1, x - 1) + 2 * at(y - 1, x) + at(y - 1, x + 1) - at(y + 1, x - 1) -
                              2 * at(y + 1, x) - at(y + 1, x + 1);
    return sum1 * sum1 + sum2 * sum2;
}

std::vector<labkit::Expected> reference(const labkit::CaseSpec& spec, const std::vector<labkit::HostArray>& inputs) {
    const labkit::HostArray& in = inputs.at(0);
    const std::uint64_t height = in.shape.at(0), width = in.shape.at(1);
    const std::int64_t threshold = spec.param("threshold");
    const std::uint8_t* u = in.as<std::uint8_t>().data();
    labkit::Expected out{"out", {height, width}, labkit::prefaulted_vector<double>(height * width), {}};
    // Every pixel depends on the input alone, so the interior rows are cut into parts, each
    // on a thread of its own (labkit/parallel.hpp).
    const std::uint64_t interior_rows = height > 2 ? height - 2 : 0;
    const std::size_t parts = labkit::parallel_parts(interior_rows * width, kMinPixelsPerPart);
    labkit::run_parts(parts, [&](std::size_t part) {
        const std::uint64_t end = 1 + labkit::part_begin(interior_rows, parts, part + 1);
        for (std::uint64_t y = 1 + labkit::part_begin(interior_rows, parts, part); y < end; ++y)
            for (std::uint64_t x = 1; x + 1 < width; ++x)
                if (magnitude_squared(u, width, x, y) > threshold) out.values[y * width + x] = 255.0;
    });
    // The first wrong pixel, in the lab sheet's terms: a border pixel, or an interior one
    // with its squared magnitude against the threshold.
    // The explanation keeps its own copy of the image: it is called after the inputs may be gone.
    auto pixels = std::make_shared<std::vector<std::uint8_t>>(labkit::prefaulted_vector<std::uint8_t>(height * width));
    labkit::parallel_for(pixels->size(), kMinPixelsPerPart, [&](std::size_t begin, std::size_t end) {
        std::copy(u + begin, u + end, pixels->begin() + static_cast<std::ptrdiff_t>(begin));
    });
    std::shared_ptr<const std::vector<std::uint8_t>> image = std::move(pixels);
    out.explain = [image, width, height, threshold](const labkit::HostArray&, std::uint64_t index) -> std::string {
        const std::uint64_t x = index % width, y = index / width;
        if (x == 0 || y == 0 || x + 1 == width || y + 1 == height)
            return "it is a border pixel, which stays 0 (the loop runs over 1 <= x < width - 1, 1 <= y < height - 1)";
        const std::int64_t m = magnitude_squared(image->data(), width, x, y);
        return "sum1^2 + sum2^2 is " + std::to_string(m) + " there, " +
               (m > threshold ? "above" : "not above") + " the threshold " + std::to_string(threshold) +
               ", so it is " + (m > threshold ? "an edge (255)" : "not an edge (0)");
    };
    return {std::move(out)};
}

}  // namespace lab_sobel
