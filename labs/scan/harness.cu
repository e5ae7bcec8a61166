// Lab scan, GPU side: on the harness's input (float or int, as the case says), hand the
// student a workspace (garbage before every call), run the scans the case asks for,
// expose their outputs. CUB's DeviceScan is the library baseline timed beside it.
#include <cub/device/device_scan.cuh>

#include <memory>

#include "labkit/check.hpp"
#include "labkit/harness.hpp"
#include "problem.hpp"
#include "scan.hpp"

namespace {

// CUB's temporary storage for the scans of n elements of T (the larger of the two, as one
// buffer serves both); asking with null pointers allocates and touches nothing.
template <class T> std::size_t cub_scan_bytes(std::int64_t n) {
    std::size_t a = 0, b = 0;
    LABKIT_CHECK(cub::DeviceScan::InclusiveSum(nullptr, a, static_cast<const T*>(nullptr), static_cast<T*>(nullptr), n));
    LABKIT_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, b, static_cast<const T*>(nullptr), static_cast<T*>(nullptr), n));
    return std::max(a, b);
}

class ScanRun final : public labkit::DeviceRun {
public:
    ScanRun(const labkit::CaseSpec& spec, const std::vector<labkit::DeviceArray*>& inputs)
        : integer_(spec.param("integer") != 0),
          in_(*inputs.at(0)),
          n_(in_.size()),
          workspace_(scan_workspace_bytes(n_)) {
        const labkit::DType t = integer_ ? labkit::DType::i32 : labkit::DType::f32;
        const std::string suffix = integer_ ? "_int" : "";
        if (spec.param("inclusive")) inclusive_ = std::make_unique<labkit::DeviceArray>("inclusive" + suffix, t,
                                                                                         std::vector{n_});
        if (spec.param("exclusive")) exclusive_ = std::make_unique<labkit::DeviceArray>("exclusive" + suffix, t,
                                                                                         std::vector{n_});
        cub_bytes_ = integer_ ? cub_scan_bytes<int>(count()) : cub_scan_bytes<float>(count());
        cub_temp_ = std::make_unique<labkit::DeviceBuffer>(cub_bytes_);
    }

    // What the constructor allocates, before it does: one output per scan the case asks
    // for, the workspace the student's scan_workspace_bytes asks for, CUB's temporary storage.
    static labkit::RunMemory memory(const labkit::CaseSpec& spec) {
        const auto n = static_cast<std::size_t>(spec.param("n"));
        const auto scans = static_cast<std::size_t>((spec.param("inclusive") != 0) + (spec.param("exclusive") != 0));
        const bool integer = spec.param("integer") != 0;
        return {.outputs = scans * n * (integer ? sizeof(int) : sizeof(float)),
                .workspace = scan_workspace_bytes(n),
                .library = integer ? cub_scan_bytes<int>(static_cast<std::int64_t>(n))
                                   : cub_scan_bytes<float>(static_cast<std::int64_t>(n))};
    }

    void run() override {
        void* ws = workspace_.data();
        if (integer_) {
            if (inclusive_) scan_inclusive_int(in_.get<int>(), inclusive_->get<int>(), n_, ws);
            if (exclusive_) scan_exclusive_int(in_.get<int>(), exclusive_->get<int>(), n_, ws);
        } else {
            if (inclusive_) scan_inclusive(in_.get<float>(), inclusive_->get<float>(), n_, ws);
            if (exclusive_) scan_exclusive(in_.get<float>(), exclusive_->get<float>(), n_, ws);
        }
    }

    std::vector<labkit::DeviceArray*> outputs() override {
        std::vector<labkit::DeviceArray*> out;
        if (inclusive_) out.push_back(inclusive_.get());
        if (exclusive_) out.push_back(exclusive_.get());
        return out;
    }

    std::vector<labkit::DeviceBuffer*> workspaces() override { return {&workspace_}; }

    const char* library_name() const override { return "CUB DeviceScan"; }
    void run_library() override {
        if (integer_) library_scans<int>();
        else library_scans<float>();
    }

private:
    std::int64_t count() const { return static_cast<std::int64_t>(n_); }

    template <class T> void library_scans() {
        std::size_t bytes = cub_bytes_;
        if (inclusive_)
            LABKIT_CHECK(cub::DeviceScan::InclusiveSum(cub_temp_->data(), bytes, in_.get<T>(), inclusive_->get<T>(),
                                                       count()));
        if (exclusive_)
            LABKIT_CHECK(cub::DeviceScan::ExclusiveSum(cub_temp_->data(), bytes, in_.get<T>(), exclusive_->get<T>(),
                                                       count()));
    }

    bool integer_;
    const labkit::DeviceArray& in_;
    std::uint64_t n_;
    labkit::DeviceBuffer workspace_;
    std::unique_ptr<labkit::DeviceArray> inclusive_, exclusive_;
    std::size_t cub_bytes_ = 0;
    std::unique_ptr<labkit::DeviceBuffer> cub_temp_;
};

}  // namespace

int main(int argc, char** argv) {
    return labkit::harness_main(
        argc, argv, lab_scan::problem(),
        [](const labkit::CaseSpec& spec, const std::vector<labkit::DeviceArray*>& inputs) {
            return std::make_unique<ScanRun>(spec, inputs);
        },
        &ScanRun::memory);
}
