#include <nppi_filtering_functions.h>

#include "sobel.hpp"

// The horizontal Sobel filter of NPP on the interior, as one call (no threshold: not even
// the right answer, but the forbidden-library check stops it before any run).
void sobel_v1(const std::uint8_t* in, std::uint8_t* out, int width, int height, int, dim3) {
    NppStreamContext context{};
    nppiFilterSobelHoriz_8u_C1R_Ctx(in + width + 1, width, out + width + 1, width, {width - 2, height - 2}, context);
}

void sobel_v2(const std::uint8_t* in, std::uint8_t* out, int width, int height, int threshold, dim3 block) {
    sobel_v1(in, out, width, height, threshold, block);
}
