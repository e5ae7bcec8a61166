// Tests of lab transpose's reference, whose blocks the checker spreads over the cores: on
// any number of parts, including more parts than blocks, it is the plain double loop's
// transpose, element for element, for shapes that are not multiples of the block side.
#include <doctest/doctest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "labkit/generate.hpp"
#include "labkit/parallel.hpp"
#include "problem.hpp"

TEST_CASE("test_transpose_reference_in_parts_is_the_plain_loop") {
    const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1}, {1, 130}, {130, 1}, {2, 3}, {63, 65}, {64, 64},
                                                          {129, 67}, {300, 200}, {0, 5}};
    for (const auto& [rows, cols] : shapes) {
        auto in = labkit::HostArray::make<float>("in", {rows, cols});
        labkit::fill_uniform(in.as<float>(), 9, 0, -1.0f, 1.0f);
        const auto x = in.as<float>();
        std::vector<double> want(rows * cols);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < cols; ++c) want[c * rows + r] = static_cast<double>(x[r * cols + c]);
        const labkit::CaseSpec spec{"t", {{"rows", std::int64_t(rows)}, {"cols", std::int64_t(cols)}}};
        for (std::size_t parts : {1, 2, 3, 7, 32}) {
            const labkit::ForcedPartsForTesting forced(parts);
            const auto e = lab_transpose::reference(spec, {in});
            REQUIRE(e.size() == 1);
            CHECK(e[0].shape == std::vector<std::uint64_t>{cols, rows});
            CHECK_MESSAGE(e[0].values == want, rows << " x " << cols << " in " << parts << " parts");
        }
    }
}
