// The student API of lab sobel. The harness calls these functions; the student implements
// them in sobel.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

// Sobel edge detection on an 8-bit grayscale image, as the lab sheet's CPU loop does it.
// in and out point to height x width bytes on the device, row-major (pixel (x, y) at
// [y * width + x]); width and height are at least 1, any size. For every pixel with a
// neighbour on all four sides (1 <= x < width - 1, 1 <= y < height - 1):
//
//   sum1 = u[y-1][x+1] - u[y-1][x-1] + 2 * u[y][x+1] - 2 * u[y][x-1] + u[y+1][x+1] - u[y+1][x-1]
//   sum2 = u[y-1][x-1] + 2 * u[y-1][x] + u[y-1][x+1] - u[y+1][x-1] - 2 * u[y+1][x] - u[y+1][x+1]
//   out[y][x] = sum1 * sum1 + sum2 * sum2 > threshold ? 255 : 0
//
// and every border pixel (first and last row and column) is 0. threshold is at least 0.
//
// block is the thread-block shape to launch with: block.x * block.y is a multiple of 32 and
// at most 1024 (the harness checks), or block.x == 0, which leaves the shape to you (what
// grading uses). `cudalab run sobel . --block 16x16` and `cudalab ladder sobel --blocks ...`
// try other shapes. Launch on the default stream; do not synchronise with the host and do
// not allocate memory here.

// Version 1: global memory only, one output pixel per thread.
void sobel_v1(const std::uint8_t* in, std::uint8_t* out, int width, int height, int threshold, dim3 block);

// Version 2: the memory hierarchy: a shared-memory tile with its halo, constants where they
// belong, several pixels per thread. Graded for speed as well as correctness.
void sobel_v2(const std::uint8_t* in, std::uint8_t* out, int width, int height, int threshold, dim3 block);
