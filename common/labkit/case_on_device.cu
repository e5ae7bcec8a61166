#include "labkit/case_on_device.hpp"

#include <algorithm>

#include "labkit/check.hpp"

namespace labkit {

CaseOnDevice::CaseOnDevice(const Problem& problem, const MakeDeviceRun& make_run, const CaseSpec& spec)
    : input_specs_(problem.inputs(spec)) {
    std::vector<DeviceArray*> pointers;
    for (const InputSpec& in : input_specs_) {
        inputs_.push_back(std::make_unique<DeviceArray>(in.name, in.dtype, in.shape));
        pointers.push_back(inputs_.back().get());
    }
    run_ = make_run(spec, pointers);
}

void CaseOnDevice::fill_inputs(std::uint64_t seed) {
    for (std::size_t i = 0; i < inputs_.size(); ++i) fill_on_device(*inputs_[i], input_specs_[i], seed);
}

void CaseOnDevice::poison_outputs() {
    for (DeviceArray* out : run_->outputs()) out->poison();
}

void CaseOnDevice::fill_workspaces_with_garbage() {
    for (DeviceBuffer* workspace : run_->workspaces())
        if (workspace->bytes()) LABKIT_CHECK(cudaMemsetAsync(workspace->data(), 0xCD, workspace->bytes()));
}

std::vector<HostArray> CaseOnDevice::download_outputs() {
    LABKIT_CHECK(cudaDeviceSynchronize());
    std::vector<HostArray> got;
    for (DeviceArray* out : run_->outputs()) got.push_back(out->download());
    return got;
}

std::size_t CaseOnDevice::largest_output_bytes() {
    std::size_t bytes = 0;
    for (DeviceArray* out : run_->outputs()) bytes = std::max(bytes, out->bytes());
    return bytes;
}

}  // namespace labkit
