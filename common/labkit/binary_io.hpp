// The labkit binary array format: little-endian magic "CLAB", format version (u32),
// dtype code (u32), rank (u32, at most 8), rank extents (u64 each), then the elements
// and nothing after them. Dumps of student outputs use it, so reading is defensive:
// every malformed file is a FormatError whose message says what is wrong.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "labkit/host_array.hpp"

namespace labkit {

inline constexpr std::uint32_t kBinaryFormatVersion = 1;
inline constexpr std::uint32_t kMaxRank = 8;

struct FormatError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void write_array(const std::filesystem::path& path, const HostArray& array);

// Reads a whole file. Throws FormatError for a missing, truncated, oversized or
// otherwise malformed file; the array's name is taken from the file name's stem.
HostArray read_array(const std::filesystem::path& path);

// Parses an in-memory image of a file (what read_array does after reading it).
HostArray parse_array(const std::string& image, const std::string& what);

}  // namespace labkit
