// The trusted checker of lab occupancy: instructor code only (see labkit/checker.hpp).
// Its live case asks the GPU (lab.toml [checker] gpu, live_reference.hpp).
#include "labkit/checker.hpp"
#include "live_reference.hpp"
#include "problem.hpp"

int main(int argc, char** argv) {
    return labkit::checker_main(argc, argv, lab_occupancy::problem(), lab_occupancy::checker_reference);
}
