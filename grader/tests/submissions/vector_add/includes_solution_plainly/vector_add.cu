// Attack: compile the reference solution into the submission, with no fallback. The path
// climbs 5 folders: from the old grader's staged copy (<repo>/.grade/tmp/grade-*/
// submission/src/vector_add.cu) that is the repository root, so the solution's
// vector_add was compiled in and passed everything at the reference's speed.
//
// What the grader must do: stage and compile the file where no solution is visible. Then
// the include fails, the build stops with the preprocessor's "No such file or directory",
// and the grade is compile_error with that line as feedback. (Compiled in place, from
// grader/tests/submissions/vector_add/includes_solution_plainly/, the same 5 levels also
// reach the repository root and it compiles: never build a submission inside the repo.)
#include "../../../../../solutions/vector_add/vector_add.cu"
