// Lab transpose's CPU reference: linked only into the trusted checker and the tests.
#include <algorithm>

#include "labkit/parallel.hpp"
#include "problem.hpp"

namespace lab_transpose {

namespace {

// Square blocks of this side are transposed one at a time, so that both the rows read
// and the rows written stay in the CPU's cache (a 16384 x 16384 bench case is judged too).
constexpr std::size_t kBlock = 64;

// A part of the blocks, spread over the cores (labkit/parallel.hpp), takes at least this
// many elements.
constexpr std::size_t kMinElementsPerPart = std::size_t(1) << 18;

}  // namespace

// Every block writes a region of out of its own, so the blocks are cut into parts, in the
// order of the rows of out they write, and each part is transposed on a thread of its own:
// every element is the same copy whatever the split.
std::vector<labkit::Expected> reference(const labkit::CaseSpec&, const std::vector<labkit::HostArray>& inputs) {
    const labkit::HostArray& in = inputs.at(0);
    const std::size_t rows = static_cast<std::size_t>(in.shape.at(0));
    const std::size_t cols = static_cast<std::size_t>(in.shape.at(1));
    const auto x = in.as<float>();
    labkit::Expected out{"out", {cols, rows}, labkit::prefaulted_vector<double>(x.size()), {}};
    const std::size_t row_blocks = (rows + kBlock - 1) / kBlock, col_blocks = (cols + kBlock - 1) / kBlock;
    const std::size_t blocks = row_blocks * col_blocks;
    const std::size_t parts = labkit::parallel_parts(x.size(), kMinElementsPerPart);
    labkit::run_parts(parts, [&](std::size_t part) {
        const std::size_t end = labkit::part_begin(blocks, parts, part + 1);
        for (std::size_t block = labkit::part_begin(blocks, parts, part); block < end; ++block) {
            const std::size_t c0 = block / row_blocks * kBlock, r0 = block % row_blocks * kBlock;
            const std::size_t r_end = std::min(rows, r0 + kBlock), c_end = std::min(cols, c0 + kBlock);
            for (std::size_t c = c0; c < c_end; ++c)
                for (std::size_t r = r0; r < r_end; ++r) out.values[c * rows + r] = static_cast<double>(x[r * cols + c]);
        }
    });
    return {std::move(out)};
}

}  // namespace lab_transpose
