// Device memory that two processes share, and the placement of a case's arrays in it.
//
// When the grader times a program, a process of its own (the auditor: official code) owns
// the timed case's inputs and outputs. It creates them in a SharedArena, exported as a
// POSIX file descriptor (CUDA's virtual memory management), and the grader hands that
// descriptor to the program under test, which maps the same memory: the auditor fills
// the inputs and copies the outputs away while the program only computes, so nothing the
// program does to its own process can change what the auditor sees or when.
//
// Both processes build the case with the same official code (the harness's inputs, the
// lab's DeviceRun), so its DeviceArrays are made in the same order with the same sizes.
// While an ArenaPlacement is alive, every DeviceArray takes its memory from the arena in
// that order: the two processes then agree on where every array is without exchanging a
// layout. Scratch memory (DeviceBuffer: workspaces, library storage) is not placed: it
// stays each process's own.
#pragma once

#include <cstddef>
#include <cstdint>

namespace labkit {

class SharedArena {
public:
    // At least `bytes` of exportable device memory on the current device (rounded up to
    // the allocation granularity).
    static SharedArena create(std::size_t bytes);
    // The arena of `bytes` bytes another process exported as `fd`, mapped read-write here.
    // The descriptor may be closed afterwards.
    static SharedArena import(int fd, std::size_t bytes);

    SharedArena(SharedArena&& other) noexcept;
    SharedArena& operator=(SharedArena&&) = delete;
    SharedArena(const SharedArena&) = delete;
    SharedArena& operator=(const SharedArena&) = delete;
    ~SharedArena();

    void* base() const { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address_)); }
    std::size_t bytes() const { return bytes_; }

    // A new descriptor for the arena, for another process (the creator's only).
    int export_fd() const;

private:
    SharedArena() = default;
    unsigned long long handle_ = 0;   // CUmemGenericAllocationHandle
    unsigned long long address_ = 0;  // CUdeviceptr
    std::size_t bytes_ = 0;
    bool mapped_ = false;
};

class ArenaPlacement {
public:
    // Counts what the DeviceArrays made in its lifetime take, which allocate as usual:
    // how large an arena a case needs.
    ArenaPlacement();
    // Places the DeviceArrays made in its lifetime in [base, base + bytes), in order.
    ArenaPlacement(void* base, std::size_t bytes);
    ArenaPlacement(const ArenaPlacement&) = delete;
    ArenaPlacement& operator=(const ArenaPlacement&) = delete;
    ~ArenaPlacement();

    // Bytes taken so far, each array aligned to kAlignment.
    std::size_t used() const { return used_; }

    static constexpr std::size_t kAlignment = 512;

    // For DeviceArray: where an array of `bytes` bytes goes, or nullptr when it allocates
    // its own (no placement, or one that only counts). Throws std::length_error when the
    // arena is full: the case does not lay out as the arena's creator's did.
    static void* take(std::size_t bytes);

private:
    unsigned char* base_ = nullptr;
    std::size_t capacity_ = 0;
    std::size_t used_ = 0;
};

}  // namespace labkit
