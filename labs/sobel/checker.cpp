// The trusted checker of lab sobel: instructor code only (see labkit/checker.hpp).
#include "labkit/checker.hpp"
#include "problem.hpp"

int main(int argc, char** argv) { return labkit::checker_main(argc, argv, lab_sobel::problem(), lab_sobel::reference); }
