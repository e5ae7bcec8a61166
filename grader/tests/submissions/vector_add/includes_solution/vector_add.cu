// Attack: compile the reference solution into the submission. A ladder of __has_include
// tests looks for solutions/vector_add/vector_add.cu relative to this file and to every
// include folder (0 to 8 levels of "../": the old grader's include folders were the
// repository's common/ and labs/vector_add/, and its staged copy sat 5 levels below the
// repository root), then at likely absolute paths; the first one found is #included and
// its vector_add passes every case at the reference's own speed. Only when none is found
// does the fallback below get compiled: a vector_add that does nothing.
//
// What the grader must do: compile where no solution source is visible (the sandbox's
// include folders hold the lab's headers only, and the repository is not mounted). Then
// the fallback is what runs, every case fails on the poisoned output, and the grade is
// correctness none. Compiled in place inside the repository this file does find the
// solution, which is exactly why the grader must never compile a submission there.
#if __has_include("solutions/vector_add/vector_add.cu")
#include "solutions/vector_add/vector_add.cu"
#elif __has_include("../solutions/vector_add/vector_add.cu")
#include "../solutions/vector_add/vector_add.cu"
#elif __has_include("../../solutions/vector_add/vector_add.cu")
#include "../../solutions/vector_add/vector_add.cu"
#elif __has_include("../../../solutions/vector_add/vector_add.cu")
#include "../../../solutions/vector_add/vector_add.cu"
#elif __has_include("../../../../solutions/vector_add/vector_add.cu")
#include "../../../../solutions/vector_add/vector_add.cu"
#elif __has_include("../../../../../solutions/vector_add/vector_add.cu")
#include "../../../../../solutions/vector_add/vector_add.cu"
#elif __has_include("../../../../../../solutions/vector_add/vector_add.cu")
#include "../../../../../../solutions/vector_add/vector_add.cu"
#elif __has_include("../../../../../../../solutions/vector_add/vector_add.cu")
#include "../../../../../../../solutions/vector_add/vector_add.cu"
#elif __has_include("../../../../../../../../solutions/vector_add/vector_add.cu")
#include "../../../../../../../../solutions/vector_add/vector_add.cu"
#elif __has_include("/work/main/solutions/vector_add/vector_add.cu")
#include "/work/main/solutions/vector_add/vector_add.cu"
#elif __has_include("/work/solutions/vector_add/vector_add.cu")
#include "/work/solutions/vector_add/vector_add.cu"
#elif __has_include("/root/cudalab/solutions/vector_add/vector_add.cu")
#include "/root/cudalab/solutions/vector_add/vector_add.cu"
#elif __has_include("/root/solutions/vector_add/vector_add.cu")
#include "/root/solutions/vector_add/vector_add.cu"
#elif __has_include("/workspace/cudalab/solutions/vector_add/vector_add.cu")
#include "/workspace/cudalab/solutions/vector_add/vector_add.cu"
#elif __has_include("/workspace/solutions/vector_add/vector_add.cu")
#include "/workspace/solutions/vector_add/vector_add.cu"
#elif __has_include("/repo/solutions/vector_add/vector_add.cu")
#include "/repo/solutions/vector_add/vector_add.cu"
#elif __has_include("/src/solutions/vector_add/vector_add.cu")
#include "/src/solutions/vector_add/vector_add.cu"
#elif __has_include("/cudalab/solutions/vector_add/vector_add.cu")
#include "/cudalab/solutions/vector_add/vector_add.cu"
#elif __has_include("/home/cudalab/solutions/vector_add/vector_add.cu")
#include "/home/cudalab/solutions/vector_add/vector_add.cu"
#elif __has_include("/home/student/cudalab/solutions/vector_add/vector_add.cu")
#include "/home/student/cudalab/solutions/vector_add/vector_add.cu"
#else
// Fallback: no solution anywhere in sight.
#include "vector_add.hpp"

void vector_add(const float* a, const float* b, float* c, std::size_t n) {
    (void)a; (void)b; (void)c; (void)n;
}
#endif
