// Lab reduction, GPU side: on the harness's input, hand the student a workspace (the
// harness fills it with garbage before every call), call reduce_sum, expose the
// one-float result. CUB's DeviceReduce::Sum is
// the library baseline timed beside it.
#include <cub/device/device_reduce.cuh>

#include <memory>

#include "labkit/check.hpp"
#include "labkit/harness.hpp"
#include "problem.hpp"
#include "reduction.hpp"

namespace {

// CUB's temporary storage for a sum of n floats; asking with null pointers allocates and
// touches nothing, so the memory estimate can ask before anything exists.
std::size_t cub_sum_bytes(std::size_t n) {
    std::size_t bytes = 0;
    LABKIT_CHECK(cub::DeviceReduce::Sum(nullptr, bytes, static_cast<const float*>(nullptr),
                                        static_cast<float*>(nullptr), static_cast<std::int64_t>(n)));
    return bytes;
}

class ReductionRun final : public labkit::DeviceRun {
public:
    explicit ReductionRun(const std::vector<labkit::DeviceArray*>& inputs)
        : in_(*inputs.at(0)),
          sum_("sum", labkit::DType::f32, {1}),
          n_(in_.size()),
          workspace_(reduce_sum_workspace_bytes(n_)),
          cub_bytes_(cub_sum_bytes(n_)),
          cub_temp_(std::make_unique<labkit::DeviceBuffer>(cub_bytes_)) {}

    // What the constructor allocates, before it does: the one-float sum, the workspace the
    // student's reduce_sum_workspace_bytes asks for, CUB's temporary storage.
    static labkit::RunMemory memory(const labkit::CaseSpec& spec) {
        const auto n = static_cast<std::size_t>(spec.param("n"));
        return {.outputs = sizeof(float), .workspace = reduce_sum_workspace_bytes(n), .library = cub_sum_bytes(n)};
    }

    void run() override { reduce_sum(in_.get<float>(), sum_.get<float>(), n_, workspace_.data()); }
    std::vector<labkit::DeviceArray*> outputs() override { return {&sum_}; }
    std::vector<labkit::DeviceBuffer*> workspaces() override { return {&workspace_}; }

    const char* library_name() const override { return "CUB DeviceReduce::Sum"; }
    void run_library() override {
        LABKIT_CHECK(cub::DeviceReduce::Sum(cub_temp_->data(), cub_bytes_, in_.get<float>(), sum_.get<float>(),
                                            static_cast<std::int64_t>(n_)));
    }

private:
    const labkit::DeviceArray& in_;
    labkit::DeviceArray sum_;
    std::size_t n_;
    labkit::DeviceBuffer workspace_;
    std::size_t cub_bytes_ = 0;
    std::unique_ptr<labkit::DeviceBuffer> cub_temp_;
};

}  // namespace

int main(int argc, char** argv) {
    return labkit::harness_main(
        argc, argv, lab_reduction::problem(),
        [](const labkit::CaseSpec&, const std::vector<labkit::DeviceArray*>& inputs) {
            return std::make_unique<ReductionRun>(inputs);
        },
        &ReductionRun::memory);
}
