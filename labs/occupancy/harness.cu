// Lab occupancy, GPU side. Four kinds of case (problem.hpp's Part):
//   * formula: each seeded scenario becomes a cudaDeviceProp and a cudaFuncAttributes
//     (a GPU of the catalogue, a kernel's resources), handed to the student's
//     max_active_blocks_per_sm and theoretical_occupancy; outputs blocks_per_sm and
//     occupancy;
//   * live: this GPU's cudaDeviceProp and the probe kernels' cudaFuncAttributes
//     (probes.cuh) go to max_active_blocks_per_sm, and each probe to choose_block_size;
//     outputs live_blocks_per_sm and chosen_block_size;
//   * required_shared_memory for every block size from 1 to 1024; output smem_bytes;
//   * matmul: matmul_dynamic into c and matmul_fixed into c_fixed. A bench case times
//     matmul_dynamic, and its library slot times the student's own matmul_fixed, so the
//     two times are reported side by side.
// The host functions' answers are uploaded into the outputs on the device, so every
// output is dumped and judged the same way.
#include <memory>
#include <vector>

#include "device_props.hpp"
#include "labkit/check.hpp"
#include "labkit/harness.hpp"
#include "occupancy.hpp"
#include "probes.cuh"
#include "problem.hpp"

namespace {

template <class T> void upload(labkit::DeviceArray& array, const std::vector<T>& values) {
    LABKIT_CHECK(cudaMemcpy(array.data(), values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice));
}

class FormulaRun final : public labkit::DeviceRun {
public:
    FormulaRun(const labkit::CaseSpec& spec, const std::vector<labkit::DeviceArray*>& inputs)
        : spec_(spec),
          scenarios_(*inputs.at(0)),
          count_(scenarios_.size() / lab_occupancy::kFormulaColumns),
          blocks_("blocks_per_sm", labkit::DType::i32, {count_}),
          occupancy_("occupancy", labkit::DType::f64, {count_}) {}

    void run() override {
        const labkit::HostArray rows = scenarios_.download();
        const auto values = rows.as<std::int32_t>();
        std::vector<std::int32_t> blocks(count_);
        std::vector<double> occupancy(count_);
        for (std::size_t i = 0; i < count_; ++i) {
            const auto s = lab_occupancy::formula_scenario(
                spec_, values.subspan(i * lab_occupancy::kFormulaColumns, lab_occupancy::kFormulaColumns));
            const auto& gpu = lab_occupancy::kGpuCatalogue.at(static_cast<std::size_t>(s.gpu));
            const cudaDeviceProp prop = lab_occupancy::to_device_prop(gpu);
            const cudaFuncAttributes kernel = lab_occupancy::to_func_attributes(s.kernel, gpu);
            blocks[i] = max_active_blocks_per_sm(prop, kernel, s.block_size, s.dynamic_shared);
            occupancy[i] = theoretical_occupancy(prop, blocks[i], s.block_size);
        }
        upload(blocks_, blocks);
        upload(occupancy_, occupancy);
    }
    std::vector<labkit::DeviceArray*> outputs() override { return {&blocks_, &occupancy_}; }

private:
    labkit::CaseSpec spec_;
    const labkit::DeviceArray& scenarios_;
    std::size_t count_;
    labkit::DeviceArray blocks_, occupancy_;
};

class LiveRun final : public labkit::DeviceRun {
public:
    explicit LiveRun(const std::vector<labkit::DeviceArray*>& inputs)
        : scenarios_(*inputs.at(0)),
          count_(scenarios_.size() / lab_occupancy::kLiveColumns),
          blocks_("live_blocks_per_sm", labkit::DType::i32, {count_}),
          chosen_("chosen_block_size", labkit::DType::i32, {static_cast<std::uint64_t>(lab_occupancy::kProbeCount)}) {
        int device = 0;
        LABKIT_CHECK(cudaGetDevice(&device));
        LABKIT_CHECK(cudaGetDeviceProperties(&prop_, device));
        for (const auto& probe : lab_occupancy::probes()) {
            cudaFuncAttributes attributes{};
            LABKIT_CHECK(cudaFuncGetAttributes(&attributes, probe.kernel));
            attributes_.push_back(attributes);
            max_threads_.push_back(attributes.maxThreadsPerBlock);
        }
    }

    void run() override {
        const labkit::HostArray rows = scenarios_.download();
        const auto values = rows.as<std::int32_t>();
        std::vector<std::int32_t> blocks(count_);
        for (std::size_t i = 0; i < count_; ++i) {
            const auto s = lab_occupancy::live_scenario(
                values.subspan(i * lab_occupancy::kLiveColumns, lab_occupancy::kLiveColumns), max_threads_);
            blocks[i] = max_active_blocks_per_sm(prop_, attributes_.at(static_cast<std::size_t>(s.probe)),
                                                 s.block_size, s.dynamic_shared);
        }
        std::vector<std::int32_t> chosen;
        for (const auto& probe : lab_occupancy::probes()) chosen.push_back(choose_block_size(probe.kernel));
        upload(blocks_, blocks);
        upload(chosen_, chosen);
    }
    std::vector<labkit::DeviceArray*> outputs() override { return {&blocks_, &chosen_}; }

private:
    const labkit::DeviceArray& scenarios_;
    std::size_t count_;
    labkit::DeviceArray blocks_, chosen_;
    cudaDeviceProp prop_{};
    std::vector<cudaFuncAttributes> attributes_;
    std::vector<int> max_threads_;
};

class SharedMemoryRun final : public labkit::DeviceRun {
public:
    SharedMemoryRun()
        : smem_("smem_bytes", labkit::DType::u64, {static_cast<std::uint64_t>(lab_occupancy::kMaxBlockSize)}) {}

    void run() override {
        std::vector<std::uint64_t> bytes;
        for (int block_size = 1; block_size <= lab_occupancy::kMaxBlockSize; ++block_size)
            bytes.push_back(required_shared_memory(block_size));
        upload(smem_, bytes);
    }
    std::vector<labkit::DeviceArray*> outputs() override { return {&smem_}; }

private:
    labkit::DeviceArray smem_;
};

class MatmulRun final : public labkit::DeviceRun {
public:
    MatmulRun(const labkit::CaseSpec& spec, const std::vector<labkit::DeviceArray*>& inputs)
        : a_(*inputs.at(0)),
          b_(*inputs.at(1)),
          m_(static_cast<int>(spec.param("m"))),
          n_(static_cast<int>(spec.param("n"))),
          k_(static_cast<int>(spec.param("k"))),
          c_("c", labkit::DType::f32, {static_cast<std::uint64_t>(m_), static_cast<std::uint64_t>(n_)}) {
        if (!lab_occupancy::is_bench_case(spec))
            c_fixed_ = std::make_unique<labkit::DeviceArray>(
                "c_fixed", labkit::DType::f32,
                std::vector<std::uint64_t>{static_cast<std::uint64_t>(m_), static_cast<std::uint64_t>(n_)});
    }

    // What the constructor allocates for a bench case: C, m x n floats (matmul_fixed,
    // the library slot, writes into the same C).
    static labkit::RunMemory memory(const labkit::CaseSpec& spec) {
        if (lab_occupancy::part_of(spec) != lab_occupancy::Part::matmul) return {};
        const auto m = static_cast<std::size_t>(spec.param("m"));
        const auto n = static_cast<std::size_t>(spec.param("n"));
        return {.outputs = m * n * sizeof(float) * (lab_occupancy::is_bench_case(spec) ? 1 : 2)};
    }

    void run() override {
        matmul_dynamic(a_.get<float>(), b_.get<float>(), c_.get<float>(), m_, n_, k_);
        if (c_fixed_) matmul_fixed(a_.get<float>(), b_.get<float>(), c_fixed_->get<float>(), m_, n_, k_);
    }
    std::vector<labkit::DeviceArray*> outputs() override {
        if (c_fixed_) return {&c_, c_fixed_.get()};
        return {&c_};
    }

    const char* library_name() const override { return "your matmul_fixed (BLOCK_SIZE 16, static shared memory)"; }
    void run_library() override { matmul_fixed(a_.get<float>(), b_.get<float>(), c_.get<float>(), m_, n_, k_); }

private:
    const labkit::DeviceArray &a_, &b_;
    int m_, n_, k_;
    labkit::DeviceArray c_;
    std::unique_ptr<labkit::DeviceArray> c_fixed_;  // correctness cases only
};

std::unique_ptr<labkit::DeviceRun> make_run(const labkit::CaseSpec& spec,
                                            const std::vector<labkit::DeviceArray*>& inputs) {
    switch (lab_occupancy::part_of(spec)) {
        case lab_occupancy::Part::formula: return std::make_unique<FormulaRun>(spec, inputs);
        case lab_occupancy::Part::live: return std::make_unique<LiveRun>(inputs);
        case lab_occupancy::Part::required_shared_memory: return std::make_unique<SharedMemoryRun>();
        case lab_occupancy::Part::matmul: return std::make_unique<MatmulRun>(spec, inputs);
    }
    throw std::logic_error("unreachable");
}

}  // namespace

int main(int argc, char** argv) {
    return labkit::harness_main(argc, argv, lab_occupancy::problem(), make_run, &MatmulRun::memory);
}
