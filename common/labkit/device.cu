#include "labkit/device.hpp"

#include "labkit/check.hpp"
#include "labkit/shared_arena.hpp"

namespace labkit {

namespace {
std::size_t byte_count(DType dtype, const std::vector<std::uint64_t>& shape) {
    std::uint64_t n = 1;
    for (auto e : shape) n *= e;
    return static_cast<std::size_t>(n) * dtype_size(dtype);
}
}  // namespace

DeviceArray::DeviceArray(std::string name, DType dtype, std::vector<std::uint64_t> shape)
    : name_(std::move(name)), dtype_(dtype), shape_(std::move(shape)), bytes_(byte_count(dtype_, shape_)) {
    if (!bytes_) return;
    data_ = ArenaPlacement::take(bytes_);  // a shared arena's, while one is being laid out
    owned_ = data_ == nullptr;
    if (owned_) LABKIT_CHECK(cudaMalloc(&data_, bytes_));
}

DeviceArray::DeviceArray(const HostArray& host) : DeviceArray(host.name, host.dtype, host.shape) {
    if (bytes_) LABKIT_CHECK(cudaMemcpy(data_, host.bytes.data(), bytes_, cudaMemcpyHostToDevice));
}

DeviceArray::~DeviceArray() {
    if (data_ && owned_) (void)cudaFree(data_);
}

std::uint64_t DeviceArray::size() const {
    std::uint64_t n = 1;
    for (auto e : shape_) n *= e;
    return n;
}

void DeviceArray::fill_bytes(int value, cudaStream_t stream) {
    if (bytes_) LABKIT_CHECK(cudaMemsetAsync(data_, value, bytes_, stream));
}

void DeviceArray::poison(cudaStream_t stream) { fill_bytes(dtype_is_float(dtype_) ? 0xFF : 0xA5, stream); }

HostArray DeviceArray::download() const {
    HostArray host;
    host.name = name_;
    host.dtype = dtype_;
    host.shape = shape_;
    host.bytes.resize(bytes_);
    if (bytes_) LABKIT_CHECK(cudaMemcpy(host.bytes.data(), data_, bytes_, cudaMemcpyDeviceToHost));
    return host;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_) LABKIT_CHECK(cudaMalloc(&data_, bytes_));
}

DeviceBuffer::~DeviceBuffer() {
    if (data_) (void)cudaFree(data_);
}

DeviceInfo query_device() {
    require_device();
    DeviceInfo info;
    LABKIT_CHECK(cudaGetDevice(&info.ordinal));
    cudaDeviceProp prop{};
    LABKIT_CHECK(cudaGetDeviceProperties(&prop, info.ordinal));
    info.name = prop.name;
    info.cc_major = prop.major;
    info.cc_minor = prop.minor;
    info.sm_count = prop.multiProcessorCount;
    info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
    info.global_memory_bytes = prop.totalGlobalMem;
    LABKIT_CHECK(cudaDriverGetVersion(&info.driver_version));
    LABKIT_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
    return info;
}

namespace {
__global__ void clock_probe(unsigned long long spin_cycles, unsigned long long* out) {
    unsigned long long t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    const long long c0 = clock64();
    long long c1 = c0;
    while (static_cast<unsigned long long>(c1 - c0) < spin_cycles) c1 = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    out[0] = static_cast<unsigned long long>(c1 - c0);
    out[1] = t1 - t0;
}
}  // namespace

double measure_sm_clock_mhz() {
    DeviceBuffer result(2 * sizeof(unsigned long long));
    auto* out = static_cast<unsigned long long*>(result.data());
    unsigned long long host[2] = {0, 0};
    // About 1 ms at typical clocks: long against the global timer's microsecond steps.
    clock_probe<<<1, 1>>>(2'000'000ull, out);
    LABKIT_CHECK_LAUNCH();
    LABKIT_CHECK(cudaMemcpy(host, out, sizeof(host), cudaMemcpyDeviceToHost));
    return host[1] ? static_cast<double>(host[0]) / static_cast<double>(host[1]) * 1000.0 : 0.0;
}

}  // namespace labkit
