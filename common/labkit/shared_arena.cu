#include "labkit/shared_arena.hpp"

#include <cuda.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "labkit/check.hpp"

namespace labkit {
namespace {

// The driver's virtual-memory calls, found through the runtime (no link against libcuda:
// the lab binaries load the driver the way the runtime does).
template <class Fn> Fn driver_entry(const char* name) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    LABKIT_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found));
    if (fn == nullptr || found != cudaDriverEntryPointSuccess)
        throw CudaError(std::string("the CUDA driver has no ") + name + ", which sharing device memory needs");
    return reinterpret_cast<Fn>(fn);
}

struct Driver {
    decltype(&cuMemCreate) create = driver_entry<decltype(&cuMemCreate)>("cuMemCreate");
    decltype(&cuMemRelease) release = driver_entry<decltype(&cuMemRelease)>("cuMemRelease");
    decltype(&cuMemGetAllocationGranularity) granularity =
        driver_entry<decltype(&cuMemGetAllocationGranularity)>("cuMemGetAllocationGranularity");
    decltype(&cuMemAddressReserve) reserve = driver_entry<decltype(&cuMemAddressReserve)>("cuMemAddressReserve");
    decltype(&cuMemAddressFree) unreserve = driver_entry<decltype(&cuMemAddressFree)>("cuMemAddressFree");
    decltype(&cuMemMap) map = driver_entry<decltype(&cuMemMap)>("cuMemMap");
    decltype(&cuMemUnmap) unmap = driver_entry<decltype(&cuMemUnmap)>("cuMemUnmap");
    decltype(&cuMemSetAccess) set_access = driver_entry<decltype(&cuMemSetAccess)>("cuMemSetAccess");
    decltype(&cuMemExportToShareableHandle) export_handle =
        driver_entry<decltype(&cuMemExportToShareableHandle)>("cuMemExportToShareableHandle");
    decltype(&cuMemImportFromShareableHandle) import_handle =
        driver_entry<decltype(&cuMemImportFromShareableHandle)>("cuMemImportFromShareableHandle");
};

const Driver& driver() {
    static const Driver d;
    return d;
}

void check(CUresult result, const char* call) {
    if (result != CUDA_SUCCESS)
        throw CudaError(std::string(call) + " failed (CUresult " + std::to_string(static_cast<int>(result)) + ")");
}

int current_device() {
    int device = 0;
    LABKIT_CHECK(cudaGetDevice(&device));
    LABKIT_CHECK(cudaFree(nullptr));  // the primary context, which the driver calls work in
    return device;
}

CUmemAllocationProp exportable_on(int device) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    return prop;
}

// Reserves addresses for `bytes` and maps `handle` there, read-write for `device`.
unsigned long long map_readwrite(CUmemGenericAllocationHandle handle, std::size_t bytes, int device) {
    const Driver& d = driver();
    CUdeviceptr address = 0;
    check(d.reserve(&address, bytes, 0, 0, 0), "cuMemAddressReserve");
    if (const CUresult mapped = d.map(address, bytes, 0, handle, 0); mapped != CUDA_SUCCESS) {
        (void)d.unreserve(address, bytes);
        check(mapped, "cuMemMap");
    }
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (const CUresult granted = d.set_access(address, bytes, &access, 1); granted != CUDA_SUCCESS) {
        (void)d.unmap(address, bytes);
        (void)d.unreserve(address, bytes);
        check(granted, "cuMemSetAccess");
    }
    return static_cast<unsigned long long>(address);
}

ArenaPlacement* g_active_placement = nullptr;

}  // namespace

SharedArena SharedArena::create(std::size_t bytes) {
    const Driver& d = driver();
    const int device = current_device();
    const CUmemAllocationProp prop = exportable_on(device);
    std::size_t granularity = 0;
    check(d.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), "cuMemGetAllocationGranularity");
    SharedArena arena;
    arena.bytes_ = (std::max<std::size_t>(bytes, 1) + granularity - 1) / granularity * granularity;
    CUmemGenericAllocationHandle handle{};
    check(d.create(&handle, arena.bytes_, &prop, 0), "cuMemCreate");
    arena.handle_ = static_cast<unsigned long long>(handle);
    arena.address_ = map_readwrite(handle, arena.bytes_, device);
    arena.mapped_ = true;
    return arena;
}

SharedArena SharedArena::import(int fd, std::size_t bytes) {
    const Driver& d = driver();
    const int device = current_device();
    SharedArena arena;
    arena.bytes_ = bytes;
    CUmemGenericAllocationHandle handle{};
    check(d.import_handle(&handle, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
          "cuMemImportFromShareableHandle");
    arena.handle_ = static_cast<unsigned long long>(handle);
    arena.address_ = map_readwrite(handle, bytes, device);
    arena.mapped_ = true;
    return arena;
}

SharedArena::SharedArena(SharedArena&& other) noexcept
    : handle_(other.handle_), address_(other.address_), bytes_(other.bytes_), mapped_(other.mapped_) {
    other.mapped_ = false;
    other.handle_ = 0;
}

SharedArena::~SharedArena() {
    if (!mapped_) return;
    const Driver& d = driver();
    (void)cudaDeviceSynchronize();
    (void)d.unmap(static_cast<CUdeviceptr>(address_), bytes_);
    (void)d.unreserve(static_cast<CUdeviceptr>(address_), bytes_);
    (void)d.release(static_cast<CUmemGenericAllocationHandle>(handle_));
}

int SharedArena::export_fd() const {
    int fd = -1;
    check(driver().export_handle(&fd, static_cast<CUmemGenericAllocationHandle>(handle_),
                                 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
          "cuMemExportToShareableHandle");
    return fd;
}

ArenaPlacement::ArenaPlacement() : ArenaPlacement(nullptr, 0) {}

ArenaPlacement::ArenaPlacement(void* base, std::size_t bytes)
    : base_(static_cast<unsigned char*>(base)), capacity_(bytes) {
    if (g_active_placement != nullptr) throw std::logic_error("one ArenaPlacement at a time");
    g_active_placement = this;
}

ArenaPlacement::~ArenaPlacement() { g_active_placement = nullptr; }

void* ArenaPlacement::take(std::size_t bytes) {
    ArenaPlacement* p = g_active_placement;
    if (p == nullptr) return nullptr;
    const std::size_t offset = p->used_;
    p->used_ += (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (p->base_ == nullptr) return nullptr;  // counting only
    if (p->used_ > p->capacity_)
        throw std::length_error("the case needs more shared memory (" + std::to_string(p->used_) +
                                " bytes so far) than the arena holds (" + std::to_string(p->capacity_) + ")");
    return p->base_ + offset;
}

}  // namespace labkit
