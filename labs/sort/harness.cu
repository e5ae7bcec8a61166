// Lab sort, GPU side: on the harness's keys (and, for a pairs case, values), hand the
// student a workspace (garbage before every call), run the sorts the case asks for, expose
// their outputs. CUB's DeviceRadixSort is the library baseline timed beside it.
#include <cub/device/device_radix_sort.cuh>

#include <memory>

#include "labkit/check.hpp"
#include "labkit/harness.hpp"
#include "problem.hpp"
#include "sort.hpp"

namespace {

// CUB's temporary storage for sorting n keys (and, with pairs, n values besides); asking
// with null pointers allocates and touches nothing, so the memory estimate can ask first.
std::size_t cub_sort_bytes(std::size_t n, bool pairs) {
    std::size_t keys = 0, with_values = 0;
    const auto count = static_cast<std::int64_t>(n);
    LABKIT_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, keys, static_cast<const std::uint32_t*>(nullptr),
                                                static_cast<std::uint32_t*>(nullptr), count));
    if (pairs)
        LABKIT_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, with_values, static_cast<const std::uint32_t*>(nullptr),
                                                     static_cast<std::uint32_t*>(nullptr),
                                                     static_cast<const std::uint32_t*>(nullptr),
                                                     static_cast<std::uint32_t*>(nullptr), count));
    return std::max(keys, with_values);
}

class SortRun final : public labkit::DeviceRun {
public:
    SortRun(const labkit::CaseSpec& spec, const std::vector<labkit::DeviceArray*>& inputs)
        : keys_in_(*inputs.at(0)),
          values_in_(spec.param("pairs") ? inputs.at(1) : nullptr),
          n_(keys_in_.size()),
          workspace_(sort_workspace_bytes(n_)),
          cub_bytes_(cub_sort_bytes(n_, values_in_ != nullptr)),
          cub_temp_(std::make_unique<labkit::DeviceBuffer>(cub_bytes_)) {
        if (spec.param("keys")) keys_ = std::make_unique<labkit::DeviceArray>("keys", labkit::DType::u32, std::vector{n_});
        if (values_in_) {
            pair_keys_ = std::make_unique<labkit::DeviceArray>("pair_keys", labkit::DType::u32, std::vector{n_});
            pair_values_ = std::make_unique<labkit::DeviceArray>("pair_values", labkit::DType::u32, std::vector{n_});
        }
    }

    // What the constructor allocates, before it does: n keys for a keys case, n keys and n
    // values for a pairs case, the workspace the student's sort_workspace_bytes asks for,
    // CUB's temporary storage.
    static labkit::RunMemory memory(const labkit::CaseSpec& spec) {
        const auto n = static_cast<std::size_t>(spec.param("n"));
        const bool pairs = spec.param("pairs") != 0;
        const std::size_t arrays = (spec.param("keys") != 0 ? 1 : 0) + (pairs ? 2 : 0);
        return {.outputs = arrays * n * sizeof(std::uint32_t),
                .workspace = sort_workspace_bytes(n),
                .library = cub_sort_bytes(n, pairs)};
    }

    void run() override {
        void* ws = workspace_.data();
        const auto* keys = keys_in_.get<std::uint32_t>();
        if (keys_) sort_keys(keys, keys_->get<std::uint32_t>(), n_, ws);
        if (values_in_)
            sort_pairs(keys, values_in_->get<std::uint32_t>(), pair_keys_->get<std::uint32_t>(),
                       pair_values_->get<std::uint32_t>(), n_, ws);
    }

    std::vector<labkit::DeviceArray*> outputs() override {
        std::vector<labkit::DeviceArray*> out;
        if (keys_) out.push_back(keys_.get());
        if (values_in_) {
            out.push_back(pair_keys_.get());
            out.push_back(pair_values_.get());
        }
        return out;
    }

    std::vector<labkit::DeviceBuffer*> workspaces() override { return {&workspace_}; }

    const char* library_name() const override { return "CUB DeviceRadixSort"; }
    void run_library() override {
        std::size_t bytes = cub_bytes_;
        const auto count = static_cast<std::int64_t>(n_);
        const auto* keys = keys_in_.get<std::uint32_t>();
        if (keys_)
            LABKIT_CHECK(cub::DeviceRadixSort::SortKeys(cub_temp_->data(), bytes, keys, keys_->get<std::uint32_t>(), count));
        bytes = cub_bytes_;
        if (values_in_)
            LABKIT_CHECK(cub::DeviceRadixSort::SortPairs(cub_temp_->data(), bytes, keys, pair_keys_->get<std::uint32_t>(),
                                                         values_in_->get<std::uint32_t>(),
                                                         pair_values_->get<std::uint32_t>(), count));
    }

private:
    const labkit::DeviceArray& keys_in_;
    const labkit::DeviceArray* values_in_;
    std::uint64_t n_;
    labkit::DeviceBuffer workspace_;
    std::unique_ptr<labkit::DeviceArray> keys_, pair_keys_, pair_values_;
    std::size_t cub_bytes_ = 0;
    std::unique_ptr<labkit::DeviceBuffer> cub_temp_;
};

}  // namespace

int main(int argc, char** argv) {
    return labkit::harness_main(
        argc, argv, lab_sort::problem(),
        [](const labkit::CaseSpec& spec, const std::vector<labkit::DeviceArray*>& inputs) {
            return std::make_unique<SortRun>(spec, inputs);
        },
        &SortRun::memory);
}
