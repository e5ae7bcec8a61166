#include "problem.hpp"

#include <stdexcept>

#include "lab_spec.hpp"
#include "labkit/datasets.hpp"

namespace lab_sobel {

namespace {

labkit::Fill image_fill(const labkit::CaseSpec& spec, std::uint64_t width) {
    if (const std::string image = spec.text("image"); !image.empty())
        return labkit::Fill::bytes(labkit::find_dataset_image(lab_datasets::kImages, image).pixels);
    switch (spec.param("pattern")) {
        case 0: return labkit::Fill::uniform_u8(0, 0, 255);  // noise: an edge almost everywhere
        // Flat 37 x 37 cells of random gray with +-6 of noise: edges along most cell borders
        // and none inside a cell (the noise alone stays far below the threshold).
        case 1: return labkit::Fill::cells_u8(0, width, 37, 6);
        default: throw std::invalid_argument("case " + spec.name + ": pattern must be 0 or 1 (see lab.toml [inputs])");
    }
}

std::vector<labkit::InputSpec> inputs(const labkit::CaseSpec& spec) {
    const auto width = static_cast<std::uint64_t>(spec.param("width"));
    const auto height = static_cast<std::uint64_t>(spec.param("height"));
    return {{"in", labkit::DType::u8, {height, width}, image_fill(spec, width)}};
}

}  // namespace

labkit::Problem problem() { return LABKIT_PROBLEM(inputs); }

}  // namespace lab_sobel
