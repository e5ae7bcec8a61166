// Tests of lab sobel's CPU side: the reference is the lab sheet's loop (worked by hand on
// small images), the threshold is strict, borders are 0, and the feedback names the first
// wrong pixel by x and y with its magnitude against the threshold. The dataset images are
// built in with the sizes the cases state, a real photograph has a sensible share of
// edges, and the bench cases are timed on a photograph the cases judge, tiled with noise.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "lab_spec.hpp"
#include "labkit/compare.hpp"
#include "labkit/datasets.hpp"
#include "labkit/generate.hpp"
#include "labkit/inputs.hpp"
#include "labkit/parallel.hpp"
#include "problem.hpp"

namespace {

labkit::HostArray image(std::uint64_t width, std::uint64_t height, const std::vector<std::uint8_t>& pixels) {
    auto a = labkit::HostArray::make<std::uint8_t>("in", {height, width});
    for (std::size_t i = 0; i < pixels.size(); ++i) a.as<std::uint8_t>()[i] = pixels[i];
    return a;
}

labkit::CaseSpec spec(std::int64_t width, std::int64_t height, std::int64_t threshold) {
    return {"t", {{"version", 2}, {"width", width}, {"height", height}, {"pattern", 0}, {"threshold", threshold}}};
}

labkit::HostArray as_dump(const labkit::Expected& e) {
    auto got = labkit::HostArray::make<std::uint8_t>("out", e.shape);
    for (std::size_t i = 0; i < e.values.size(); ++i) got.as<std::uint8_t>()[i] = static_cast<std::uint8_t>(e.values[i]);
    return got;
}

double edge_fraction(const labkit::Expected& e) {
    double edges = 0;
    for (double v : e.values) edges += v == 255.0;
    return edges / static_cast<double>(e.values.size());
}

}  // namespace

TEST_CASE("test_sobel_reference_is_the_lab_sheets_loop_worked_by_hand") {
    // A vertical step from 0 to 100 between columns 1 and 2 of a 4 x 3 image:
    //   0 0 100 100
    //   0 0 100 100
    //   0 0 100 100
    // At (1, 1): sum1 = 100 - 0 + 2 (100 - 0) + 100 - 0 = 400, sum2 = 0, so 160000.
    // At (2, 1): sum1 = 100 - 0 + 2 (100 - 0) + 100 - 0 = 400 as well.
    const auto in = image(4, 3, {0, 0, 100, 100, 0, 0, 100, 100, 0, 0, 100, 100});
    CHECK(lab_sobel::magnitude_squared(in.as<std::uint8_t>().data(), 4, 1, 1) == 160000);
    CHECK(lab_sobel::magnitude_squared(in.as<std::uint8_t>().data(), 4, 2, 1) == 160000);
    const auto at_limit = lab_sobel::reference(spec(4, 3, 160000), {in});
    CHECK(at_limit[0].values == std::vector<double>(12, 0.0));  // > threshold, not >=
    const auto below = lab_sobel::reference(spec(4, 3, 159999), {in});
    CHECK(below[0].values == std::vector<double>{0, 0, 0, 0, 0, 255, 255, 0, 0, 0, 0, 0});
}

TEST_CASE("test_sobel_reference_sum2_is_the_vertical_gradient") {
    // A horizontal step: rows 0 to 2 of a 3 x 3 image are 10, 20, 250. At (1, 1):
    // sum1 = 0, sum2 = (10 + 20 + 10) - (250 + 500 + 250) = -960, so 921600.
    const auto in = image(3, 3, {10, 10, 10, 20, 20, 20, 250, 250, 250});
    CHECK(lab_sobel::magnitude_squared(in.as<std::uint8_t>().data(), 3, 1, 1) == 921600);
    CHECK(lab_sobel::reference(spec(3, 3, 921599), {in})[0].values[4] == 255.0);
    CHECK(lab_sobel::reference(spec(3, 3, 921600), {in})[0].values[4] == 0.0);
}

TEST_CASE("test_sobel_reference_leaves_every_border_pixel_0") {
    std::vector<std::uint8_t> noise(7 * 5);
    for (std::size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<std::uint8_t>((i * 97) % 251);
    const auto e = lab_sobel::reference(spec(7, 5, 0), {image(7, 5, noise)});
    for (std::uint64_t y = 0; y < 5; ++y)
        for (std::uint64_t x = 0; x < 7; ++x)
            if (x == 0 || y == 0 || x == 6 || y == 4) CHECK(e[0].values[y * 7 + x] == 0.0);
    for (const auto& [w, h] : std::vector<std::pair<int, int>>{{1, 1}, {2, 2}, {1, 9}, {9, 1}, {2, 9}}) {
        const auto tiny = lab_sobel::reference(spec(w, h, 0), {image(w, h, std::vector<std::uint8_t>(w * h, 200))});
        CHECK(tiny[0].values == std::vector<double>(static_cast<std::size_t>(w * h), 0.0));
    }
}

TEST_CASE("test_sobel_feedback_names_the_first_wrong_pixel_by_x_and_y_with_its_magnitude") {
    const auto in = image(4, 3, {0, 0, 100, 100, 0, 0, 100, 100, 0, 0, 100, 100});
    const auto e = lab_sobel::reference(spec(4, 3, 1000), {in});
    auto got = as_dump(e[0]);
    got.as<std::uint8_t>()[6] = 0;  // (x = 2, y = 1) missed
    got.as<std::uint8_t>()[11] = 255;  // (x = 3, y = 2), a border pixel, set
    const auto report = labkit::compare_within_tolerance(e[0], got, labkit::Tolerance{0.0, 0.0, 0});
    CHECK_FALSE(report.passed);
    CHECK(report.mismatches == 2);
    INFO(report.message);
    CHECK(report.message.find("out[y=1, x=2]") != std::string::npos);
    CHECK(report.message.find("sum1^2 + sum2^2 is 160000 there, above the threshold 1000, so it is an edge (255)") !=
          std::string::npos);
    got.as<std::uint8_t>()[6] = 255;
    const auto border = labkit::compare_within_tolerance(e[0], got, labkit::Tolerance{0.0, 0.0, 0});
    CHECK(border.message.find("out[y=2, x=3]") != std::string::npos);
    CHECK(border.message.find("it is a border pixel, which stays 0") != std::string::npos);
}

TEST_CASE("test_sobel_dataset_images_are_built_in_with_the_sizes_the_cases_state") {
    const auto p = lab_sobel::problem();
    int image_cases = 0;
    for (const auto& c : p.cases) {
        const std::string name = c.text("image");
        if (name.empty()) continue;
        ++image_cases;
        const auto& img = labkit::find_dataset_image(lab_datasets::kImages, name);
        CHECK(img.width == c.param("width"));
        CHECK(img.height == c.param("height"));
        // The same pixels whatever the seed: a photograph, not a generator.
        const auto a = labkit::make_host_inputs(p, c, 1), b = labkit::make_host_inputs(p, c, 99);
        CHECK(a[0].bytes == b[0].bytes);
        CHECK(a[0].as<std::uint8_t>()[0] == img.pixels[0]);
    }
    CHECK(image_cases >= 4);
    CHECK_THROWS_WITH_AS(labkit::find_dataset_image(lab_datasets::kImages, "lena"),
                         doctest::Contains("no dataset image 'lena'"), std::out_of_range);
}

TEST_CASE("test_sobel_a_photograph_has_a_sensible_share_of_edges") {
    const auto p = lab_sobel::problem();
    for (const char* name : {"v2_camera", "v2_chelsea", "v2_coffee"}) {
        const auto* c = p.find(name);
        REQUIRE(c);
        const auto e = lab_sobel::reference(*c, labkit::make_host_inputs(p, *c, 1));
        const double share = edge_fraction(e[0]);
        INFO(name << ": " << share);
        CHECK(share > 0.02);  // edges found
        CHECK(share < 0.40);  // but not everything
    }
}

TEST_CASE("test_sobel_synthetic_cells_have_edges_on_cell_borders_only") {
    const auto p = lab_sobel::problem();
    const auto* c = p.find("v1_w1023_h517");
    REQUIRE(c);
    const auto inputs = labkit::make_host_inputs(p, *c, 7);
    const auto e = lab_sobel::reference(*c, inputs);
    const double share = edge_fraction(e[0]);
    CHECK(share > 0.03);
    CHECK(share < 0.25);
    // Inside a 37 x 37 cell (two pixels from any border) the noise alone is never an edge.
    for (std::uint64_t y = 1; y + 1 < 517; ++y)
        for (std::uint64_t x = 1; x + 1 < 1023; ++x)
            if (x % 37 >= 2 && x % 37 <= 35 && y % 37 >= 2 && y % 37 <= 35) REQUIRE(e[0].values[y * 1023 + x] == 0.0);
    // Different seeds, different images; the same seed, the same image.
    CHECK(labkit::make_host_inputs(p, *c, 7)[0].bytes == inputs[0].bytes);
    CHECK(labkit::make_host_inputs(p, *c, 8)[0].bytes != inputs[0].bytes);
}

TEST_CASE("test_sobel_bench_images_are_a_photograph_the_cases_judge_tiled_with_noise") {
    const auto p = lab_sobel::problem();
    REQUIRE(p.bench_cases.size() == 2);
    for (const auto& bench : p.bench_cases) {
        INFO(bench.name);
        CHECK(bench.param("pattern") == 2);
        // The photograph is one a correctness case judges as it is.
        const std::string tiles = bench.text("tiles");
        CHECK(std::any_of(p.cases.begin(), p.cases.end(), [&](const auto& c) { return c.text("image") == tiles; }));
        const auto specs = p.inputs(bench);
        REQUIRE(specs.size() == 1);
        const auto& photo = labkit::find_dataset_image(lab_datasets::kImages, tiles);
        CHECK(specs[0].fill.kind == labkit::Fill::Kind::tiles_u8);
        CHECK(specs[0].fill.data == photo.pixels);
        CHECK(specs[0].fill.source_width == photo.width);
        CHECK(specs[0].fill.source_height == photo.height);
        CHECK(specs[0].fill.noise == 3);
        CHECK(specs[0].shape == std::vector<std::uint64_t>{16384, 16384});
    }
    // The timed case's picture at a smaller size (the same description): a photograph's
    // share of edges, edges well inside where 37 x 37 flat cells would have none, and the
    // tiled photograph within +-3 at every pixel.
    labkit::CaseSpec smaller = *p.find("v2_16384");
    for (auto& [key, value] : smaller.params)
        if (key == "width") value = 1023;
        else if (key == "height") value = 517;
    const auto inputs = labkit::make_host_inputs(p, smaller, 7);
    const auto e = lab_sobel::reference(smaller, inputs);
    const double share = edge_fraction(e[0]);
    INFO("share of edges: " << share);
    CHECK(share > 0.02);
    CHECK(share < 0.40);
    std::uint64_t inside_cells = 0;
    for (std::uint64_t y = 1; y + 1 < 517; ++y)
        for (std::uint64_t x = 1; x + 1 < 1023; ++x)
            if (x % 37 >= 2 && x % 37 <= 35 && y % 37 >= 2 && y % 37 <= 35) inside_cells += e[0].values[y * 1023 + x] == 255.0;
    CHECK(inside_cells > 1000);
    const auto& photo = labkit::find_dataset_image(lab_datasets::kImages, smaller.text("tiles"));
    const auto placement = labkit::tile_placement(7, 0, photo.width, photo.height);
    int worst = 0;
    for (std::uint64_t y = 0; y < 517; ++y)
        for (std::uint64_t x = 0; x < 1023; ++x) {
            const int plain = labkit::tiled_u8_at(7, 0, photo.pixels, photo.width, photo.height, placement, x, y, 1023, 0);
            worst = std::max(worst, std::abs(int(inputs[0].as<std::uint8_t>()[y * 1023 + x]) - plain));
        }
    CHECK(worst == 3);
    // Every seed, an image of its own.
    CHECK(labkit::make_host_inputs(p, smaller, 8)[0].bytes != inputs[0].bytes);
}

TEST_CASE("test_sobel_a_tiled_case_needs_pattern_2_and_a_photograph") {
    const auto p = lab_sobel::problem();
    labkit::CaseSpec no_photo = *p.find("v2_16384");
    no_photo.texts.clear();
    CHECK_THROWS_WITH_AS(p.inputs(no_photo), doctest::Contains("pattern = 2 needs tiles = NAME"), std::invalid_argument);
    labkit::CaseSpec cells = *p.find("v2_16384");
    for (auto& [key, value] : cells.params)
        if (key == "pattern") value = 1;
    CHECK_THROWS_WITH_AS(p.inputs(cells), doctest::Contains("goes with pattern = 2"), std::invalid_argument);
}

TEST_CASE("test_sobel_cases_cover_the_versions_and_the_bench_counts_pixels") {
    const auto p = lab_sobel::problem();
    CHECK(p.takes_block);
    CHECK(p.items_name == "pixels");
    const auto* bench = p.find("v2_16384");
    REQUIRE(bench);
    CHECK(p.items(*bench) == 16384.0 * 16384.0);
    CHECK(p.bytes_moved(*bench) == 2.0 * 16384.0 * 16384.0);
    int v1 = 0, v2 = 0;
    for (const auto& c : p.cases) (c.param("version") == 1 ? v1 : v2) += 1;
    CHECK(v1 == v2);
}

TEST_CASE("test_sobel_reference_in_parts_is_the_lab_sheets_loop") {
    // The interior rows are cut into parts on several threads: on any number of parts,
    // including more parts than rows, every pixel is the lab sheet's loop's, borders 0.
    const std::pair<std::uint64_t, std::uint64_t> shapes[] = {{0, 0}, {4, 0},   {1, 1},   {2, 2},
                                                              {3, 3}, {3, 200}, {200, 3}, {67, 131}};
    for (const auto& [width, height] : shapes) {
        std::vector<std::uint8_t> pixels(width * height);
        labkit::fill_u8(pixels, 5, labkit::Fill::uniform_u8(0, 0, 255));
        const auto in = image(width, height, pixels);
        std::vector<double> want(width * height, 0.0);
        for (std::uint64_t y = 1; y + 1 < height; ++y)
            for (std::uint64_t x = 1; x + 1 < width; ++x)
                if (lab_sobel::magnitude_squared(pixels.data(), width, x, y) > 10000) want[y * width + x] = 255.0;
        for (std::size_t parts : {1, 2, 3, 7, 32}) {
            const labkit::ForcedPartsForTesting forced(parts);
            const auto e = lab_sobel::reference(spec(std::int64_t(width), std::int64_t(height), 10000), {in});
            REQUIRE(e.size() == 1);
            CHECK_MESSAGE(e[0].values == want, width << " x " << height << " in " << parts << " parts");
        }
    }
}
