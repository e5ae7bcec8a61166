// A typed, shaped array in host memory: what labs generate as inputs, what the harness
// downloads as outputs, and what the binary format stores.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "labkit/dtype.hpp"

namespace labkit {

struct HostArray {
    std::string name;
    DType dtype = DType::f32;
    std::vector<std::uint64_t> shape;  // row-major extents; {n} for a vector
    std::vector<std::byte> bytes;

    std::uint64_t size() const {
        std::uint64_t n = 1;
        for (auto e : shape) n *= e;
        return n;
    }

    template <class T> std::span<T> as() {
        check_type<T>();
        return {reinterpret_cast<T*>(bytes.data()), static_cast<std::size_t>(size())};
    }
    template <class T> std::span<const T> as() const {
        check_type<T>();
        return {reinterpret_cast<const T*>(bytes.data()), static_cast<std::size_t>(size())};
    }

    template <class T>
    static HostArray make(std::string name, std::vector<std::uint64_t> shape) {
        HostArray a;
        a.name = std::move(name);
        a.dtype = dtype_of<T>();
        a.shape = std::move(shape);
        a.bytes.resize(static_cast<std::size_t>(a.size()) * sizeof(T));
        return a;
    }

private:
    template <class T> void check_type() const {
        if (dtype_of<T>() != dtype)
            throw std::logic_error("array '" + name + "' holds " + std::string(dtype_name(dtype)) +
                                   ", not " + std::string(dtype_name(dtype_of<T>())));
    }
};

}  // namespace labkit
