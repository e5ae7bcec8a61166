#include "labkit/binary_io.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "labkit/parallel.hpp"

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

namespace {

// The largest header: magic, version, dtype, rank and kMaxRank extents.
constexpr std::size_t kMaxHeaderBytes = 4 + 3 * sizeof(std::uint32_t) + kMaxRank * sizeof(std::uint64_t);

// An array (without its elements) from the header at the start of `image`, in a file of
// `file_bytes` bytes in all, and where its elements start. `image` holds the file's first
// bytes: its whole header, or the whole file where that is shorter.
HostArray parse_header(const std::string& image, std::uint64_t file_bytes, const std::string& what,
                       std::size_t& data_offset) {
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
    const std::uint64_t payload = file_bytes - at;
    const std::uint64_t element = dtype_size(*dtype);
    if (count > payload / element || count * element != payload) {
        std::ostringstream msg;
        msg << what << ": the header promises " << count << " elements of " << dtype_name(*dtype) << " ("
            << count * element << " bytes) but the file holds " << payload << " bytes of data";
        throw FormatError(msg.str());
    }
    data_offset = at;
    return array;
}

}  // namespace

HostArray parse_array(const std::string& image, const std::string& what) {
    std::size_t at = 0;
    HostArray array = parse_header(image, image.size(), what, at);
    array.bytes.resize(image.size() - at);
    if (!array.bytes.empty()) std::memcpy(array.bytes.data(), image.data() + at, array.bytes.size());
    return array;
}

// The header is parsed from the file's first bytes and the elements are read straight into
// the array: a dump of a bench case is a gigabyte, which is not copied through a buffer.
HostArray read_array(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw FormatError(path.string() + ": no such file (was the output dumped?)");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw FormatError(path.string() + ": cannot be opened for reading");
    in.seekg(0, std::ios::end);
    const std::streamoff file_bytes = in.tellg();
    in.seekg(0, std::ios::beg);
    if (file_bytes < 0 || !in) throw FormatError(path.string() + ": cannot be read (its size is unknown)");
    std::string head(static_cast<std::size_t>(std::min<std::streamoff>(file_bytes, kMaxHeaderBytes)), '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    if (!in) throw FormatError(path.string() + ": the file changed while it was read (it is shorter than it was)");
    std::size_t at = 0;
    HostArray array = parse_header(head, static_cast<std::uint64_t>(file_bytes), path.string(), at);
    resize_prefaulted(array.bytes, static_cast<std::size_t>(file_bytes) - at);
    in.seekg(static_cast<std::streamoff>(at), std::ios::beg);
    in.read(reinterpret_cast<char*>(array.bytes.data()), static_cast<std::streamsize>(array.bytes.size()));
    if (!in || in.gcount() != static_cast<std::streamsize>(array.bytes.size()) ||
        in.peek() != std::ifstream::traits_type::eof())
        throw FormatError(path.string() + ": the file changed while it was read (its size is not what it was)");
    array.name = path.stem().string();
    return array;
}

}  // namespace labkit
