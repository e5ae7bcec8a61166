// The launch the transpose-ladder rungs share where each block owns one square tile of
// the matrix (thread per element, tiled, tiled and padded, 32x8): a 2-D grid, as in
// lecture 10, with blockIdx.x over the tiles across the columns of in and blockIdx.y over
// the tiles down its rows. A grid is at most 65535 blocks tall, so a matrix with more rows
// of tiles than that (over two million rows, with 32-row tiles) is launched as several
// grids, each told the first tile row it covers; every kernel adds that to blockIdx.y.
//
// The rungs differ only in their kernels, so this host-side launch lives here once, and
// each rung file keeps just its teaching kernel. The student-facing
// solutions/transpose/transpose.cu and starter/ stay single files on purpose.
#pragma once

#include <algorithm>
#include <cstddef>

#include "labkit/check.hpp"

namespace tiles {

inline constexpr std::size_t kMaxGridY = 65535;

// Calls launch(grid, first_tile_row) once per grid that together cover every tile of a
// rows x cols matrix cut into tile x tile tiles, and checks each launch.
template <class Launch>
void launch_over_tiles(std::size_t rows, std::size_t cols, std::size_t tile, Launch&& launch) {
    const std::size_t tiles_across = (cols + tile - 1) / tile;
    const std::size_t tiles_down = (rows + tile - 1) / tile;
    for (std::size_t first = 0; first < tiles_down; first += kMaxGridY) {
        const dim3 grid(static_cast<unsigned>(tiles_across), static_cast<unsigned>(std::min(kMaxGridY, tiles_down - first)));
        launch(grid, first);
        LABKIT_CHECK_LAUNCH();
    }
}

}  // namespace tiles
