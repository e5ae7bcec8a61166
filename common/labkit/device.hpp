// Device memory that knows what it holds (name, element type, shape), and what the
// device is: what every harness allocates, uploads, poisons and downloads.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "labkit/host_array.hpp"
#include "labkit/inputs.hpp"

namespace labkit {

// Allocated with cudaMalloc, or placed in a shared arena while an ArenaPlacement is alive
// (labkit/shared_arena.hpp).
class DeviceArray {
public:
    DeviceArray(std::string name, DType dtype, std::vector<std::uint64_t> shape);
    explicit DeviceArray(const HostArray& host);  // allocate and upload
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    ~DeviceArray();

    template <class T> T* get() const { return static_cast<T*>(data_); }
    void* data() const { return data_; }
    const std::string& name() const { return name_; }
    DType dtype() const { return dtype_; }
    const std::vector<std::uint64_t>& shape() const { return shape_; }
    std::uint64_t size() const;
    std::size_t bytes() const { return bytes_; }

    // Fills the array with a value no correct program produces: NaN for floats,
    // 0xA5A5... for integers. Unwritten elements then show up in the check.
    void poison(cudaStream_t stream = nullptr);
    void fill_bytes(int value, cudaStream_t stream = nullptr);
    HostArray download() const;

private:
    std::string name_;
    DType dtype_;
    std::vector<std::uint64_t> shape_;
    std::size_t bytes_ = 0;
    void* data_ = nullptr;
    bool owned_ = true;  // false: placed in a shared arena (labkit/shared_arena.hpp), which owns it
};

// Raw scratch memory (workspaces, baselines).
class DeviceBuffer {
public:
    explicit DeviceBuffer(std::size_t bytes);
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer();
    void* data() const { return data_; }
    std::size_t bytes() const { return bytes_; }

private:
    std::size_t bytes_;
    void* data_ = nullptr;
};

struct DeviceInfo {
    int ordinal = 0;
    std::string name;
    int cc_major = 0, cc_minor = 0;
    int sm_count = 0;
    std::size_t l2_bytes = 0;
    std::size_t global_memory_bytes = 0;
    int driver_version = 0;
    int runtime_version = 0;
};

// Throws NoDevice where there is none.
DeviceInfo query_device();

// Fills `array` (allocated for `spec`) on the device from the seed: the values
// generate_on_host(spec, seed) gives on the CPU (device_inputs.cu).
void fill_on_device(DeviceArray& array, const InputSpec& spec, std::uint64_t seed);

// The SM clock right now, in MHz, measured by a short spin kernel as clock cycles per
// global-timer nanosecond (independent of what the driver reports).
double measure_sm_clock_mhz();

}  // namespace labkit
