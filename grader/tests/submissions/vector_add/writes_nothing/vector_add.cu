// Bug: does nothing at all. The harness poisons the output first, so nothing can pass by luck.
#include "vector_add.hpp"

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    (void)a; (void)b; (void)c; (void)n;
}
