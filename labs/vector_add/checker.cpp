// The trusted checker of lab vector_add: instructor code only (see labkit/checker.hpp).
#include "labkit/checker.hpp"
#include "problem.hpp"

int main(int argc, char** argv) { return labkit::checker_main(argc, argv, lab_vector_add::problem(), lab_vector_add::reference); }
