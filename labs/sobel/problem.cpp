#include "problem.hpp"

#include <stdexcept>

#include "lab_spec.hpp"
#include "labkit/datasets.hpp"

namespace lab_sobel {

namespace {

labkit::Fill image_fill(const labkit::CaseSpec& spec, std::uint64_t width) {
    if (const std::string image = spec.text("image"); !image.empty())
        return labkit::Fill::bytes(labkit::find_dataset_image(lab_datasets::kImages, image).pixels);
    const std::string tiles = spec.text("tiles");
    if (spec.param("pattern") == 2 && tiles.empty())
        throw std::invalid_argument("case " + spec.name + ": pattern = 2 needs tiles = NAME, the photograph to tile with");
    if (spec.param("pattern") != 2 && !tiles.empty())
        throw std::invalid_argument("case " + spec.name + ": tiles = \"" + tiles + "\" goes with pattern = 2");
    switch (spec.param("pattern")) {
        case 0: return labkit::Fill::uniform_u8(0, 0, 255);  // noise: an edge almost everywhere
        // Flat 37 x 37 cells of random gray with +-6 of noise: edges along most cell borders
        // and none inside a cell (the noise alone stays far below the threshold).
        case 1: return labkit::Fill::cells_u8(0, width, 37, 6);
        // The bench's picture: a photograph the cases judge, tiled in mirrored copies to any
        // size, turned and shifted by the seed, with +-3 of noise per pixel. Its edges are a
        // photograph's, everywhere in the image, so a shortcut right only on an easier picture
        // (flat cells, with edges along the cell borders only) fails the checked sample; noise,
        // the cases' other family, would be an edge almost everywhere, like no photograph. Every
        // seed gives every pixel a value of its own, so no timed call can reuse an earlier
        // answer (not even one shifted to the new offset).
        case 2: {
            const auto& photo = labkit::find_dataset_image(lab_datasets::kImages, tiles);
            return labkit::Fill::tiles_u8(0, width, photo.pixels, photo.width, photo.height, 3);
        }
        default:
            throw std::invalid_argument("case " + spec.name + ": pattern must be 0, 1 or 2 (see lab.toml [inputs])");
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
