// Lab transpose's CPU reference: linked only into the trusted checker and the tests.
#include <algorithm>

#include "problem.hpp"

namespace lab_transpose {

namespace {

// Square blocks of this side are transposed one at a time, so that both the rows read
// and the rows written stay in the CPU's cache (a 16384 x 16384 bench case is judged too).
constexpr std::size_t kBlock = 64;

}  // namespace

std::vector<labkit::Expected> reference(const labkit::CaseSpec&, const std::vector<labkit::HostArray>& inputs) {
    const labkit::HostArray& in = inputs.at(0);
    const std::size_t rows = static_cast<std::size_t>(in.shape.at(0));
    const std::size_t cols = static_cast<std::size_t>(in.shape.at(1));
    const auto x = in.as<float>();
    labkit::Expected out{"out", {cols, rows}, std::vector<double>(x.size()), {}};
    for (std::size_t r0 = 0; r0 < rows; r0 += kBlock) {
        for (std::size_t c0 = 0; c0 < cols; c0 += kBlock) {
            const std::size_t r_end = std::min(rows, r0 + kBlock), c_end = std::min(cols, c0 + kBlock);
            for (std::size_t c = c0; c < c_end; ++c)
                for (std::size_t r = r0; r < r_end; ++r) out.values[c * rows + r] = static_cast<double>(x[r * cols + c]);
        }
    }
    return {std::move(out)};
}

}  // namespace lab_transpose
