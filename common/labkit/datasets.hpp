// The real images of datasets/images that a lab's cases name (image = "camera" in
// lab.toml), embedded in the lab's binaries at build time: the harness and the trusted
// checker read the same pixels without opening a file, so no run needs the datasets folder
// and nothing a submission does can change an input. Each lab's generated datasets.cpp
// defines lab_datasets::kImages (empty where no case names an image).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace labkit {

struct DatasetImage {
    const char* name;
    std::uint32_t width;
    std::uint32_t height;
    const unsigned char* pixels;  // height rows of width 8-bit gray levels
};

// The image called `name` among `images`; throws std::out_of_range naming the known ones.
inline const DatasetImage& find_dataset_image(const std::vector<DatasetImage>& images, std::string_view name) {
    std::string known;
    for (const auto& image : images) {
        if (image.name == name) return image;
        known += (known.empty() ? "" : ", ") + std::string(image.name);
    }
    throw std::out_of_range("no dataset image '" + std::string(name) + "' is built into this lab (it has: " +
                            (known.empty() ? std::string("none") : known) + ")");
}

}  // namespace labkit

namespace lab_datasets {
extern const std::vector<labkit::DatasetImage> kImages;
}  // namespace lab_datasets
