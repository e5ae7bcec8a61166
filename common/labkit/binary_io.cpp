#include "labkit/binary_io.hpp"

#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace labkit {
namespace {

constexpr char kMagic[4] = {'C', 'L', 'A', 'B'};

template <class T> void put(std::string& out, T value) {
    char raw[sizeof(T)];
    std::memcpy(raw, &value, sizeof(T));  // the format is little-endian, like every CUDA host
    out.append(raw, sizeof(T));
}

template <class T> T take(const std::string& image, std::size_t& at, const std::string& what,
                          const char* field) {
    if (image.size() - at < sizeof(T))
        throw FormatError(what + ": the file ends inside its header (while reading the " + field +
                          "); it is truncated or not a labkit array file");
    T value;
    std::memcpy(&value, image.data() + at, sizeof(T));
    at += sizeof(T);
    return value;
}

}  // namespace

void write_array(const std::filesystem::path& path, const HostArray& array) {
    if (array.bytes.size() != array.size() * dtype_size(array.dtype))
        throw std::logic_error("array '" + array.name + "' has " + std::to_string(array.bytes.size()) +
                               " bytes, which does not match its shape");
    if (array.shape.size() > kMaxRank)
        throw std::logic_error("array '" + array.name + "' has rank above " + std::to_string(kMaxRank));
    std::string header;
    header.append(kMagic, 4);
    put<std::uint32_t>(header, kBinaryFormatVersion);
    put<std::uint32_t>(header, static_cast<std::uint32_t>(array.dtype));
    put<std::uint32_t>(header, static_cast<std::uint32_t>(array.shape.size()));
    for (auto extent : array.shape) put<std::uint64_t>(header, extent);

    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot open " + path.string() + " for writing");
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(reinterpret_cast<const char*>(array.bytes.data()),
              static_cast<std::streamsize>(array.bytes.size()));
    if (!out) throw std::runtime_error("could not write all of " + path.string() + " (disk full?)");
}

HostArray parse_array(const std::string& image, const std::string& what) {
    std::size_t at = 0;
    if (image.size() < 4 || std::memcmp(image.data(), kMagic, 4) != 0)
        throw FormatError(what + ": not a labkit array file (it does not start with \"CLAB\")");
    at = 4;
    const auto version = take<std::uint32_t>(image, at, what, "format version");
    if (version != kBinaryFormatVersion)
        throw FormatError(what + ": format version " + std::to_string(version) + ", but this build reads version " +
                          std::to_string(kBinaryFormatVersion));
    const auto code = take<std::uint32_t>(image, at, what, "element type");
    const auto dtype = dtype_from_code(code);
    if (!dtype) throw FormatError(what + ": unknown element type code " + std::to_string(code));
    const auto rank = take<std::uint32_t>(image, at, what, "rank");
    if (rank > kMaxRank)
        throw FormatError(what + ": rank " + std::to_string(rank) + " is above the limit of " +
                          std::to_string(kMaxRank));

    HostArray array;
    array.name = what;
    array.dtype = *dtype;
    std::uint64_t count = 1;
    for (std::uint32_t d = 0; d < rank; ++d) {
        const auto extent = take<std::uint64_t>(image, at, what, "shape");
        if (extent != 0 && count > std::numeric_limits<std::uint64_t>::max() / extent)
            throw FormatError(what + ": the shape's element count overflows 64 bits");
        count *= extent;
        array.shape.push_back(extent);
    }
    const std::uint64_t payload = image.size() - at;
    const std::uint64_t element = dtype_size(*dtype);
    if (count > payload / element || count * element != payload) {
        std::ostringstream msg;
        msg << what << ": the header promises " << count << " elements of " << dtype_name(*dtype) << " ("
            << count * element << " bytes) but the file holds " << payload << " bytes of data";
        throw FormatError(msg.str());
    }
    array.bytes.resize(static_cast<std::size_t>(payload));
    if (payload) std::memcpy(array.bytes.data(), image.data() + at, static_cast<std::size_t>(payload));
    return array;
}

HostArray read_array(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw FormatError(path.string() + ": no such file (was the output dumped?)");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw FormatError(path.string() + ": cannot be opened for reading");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    HostArray array = parse_array(buffer.str(), path.string());
    array.name = path.stem().string();
    return array;
}

}  // namespace labkit
