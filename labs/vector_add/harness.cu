// Lab vector_add, GPU side: call the student's vector_add on the harness's a and b,
// expose c.
#include <memory>

#include "labkit/harness.hpp"
#include "problem.hpp"
#include "vector_add.hpp"

namespace {

class VectorAddRun final : public labkit::DeviceRun {
public:
    explicit VectorAddRun(const std::vector<labkit::DeviceArray*>& inputs)
        : a_(*inputs.at(0)), b_(*inputs.at(1)), c_("c", labkit::DType::f32, {a_.size()}) {}

    void run() override { vector_add(a_.get<float>(), b_.get<float>(), c_.get<float>(), c_.size()); }
    std::vector<labkit::DeviceArray*> outputs() override { return {&c_}; }

private:
    const labkit::DeviceArray &a_, &b_;
    labkit::DeviceArray c_;
};

}  // namespace

int main(int argc, char** argv) {
    return labkit::harness_main(
        argc, argv, lab_vector_add::problem(),
        [](const labkit::CaseSpec&, const std::vector<labkit::DeviceArray*>& inputs) {
            return std::make_unique<VectorAddRun>(inputs);
        },
        // What VectorAddRun allocates besides the inputs: c, n floats.
        [](const labkit::CaseSpec& spec) {
            return labkit::RunMemory{.outputs = static_cast<std::size_t>(spec.param("n")) * sizeof(float)};
        });
}
