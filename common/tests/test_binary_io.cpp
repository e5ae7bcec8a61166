// Tests of labkit/binary_io.hpp: round trips, and a clear FormatError for every kind of
// malformed file a crashed or hostile program could leave behind.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "labkit/binary_io.hpp"

using labkit::FormatError;
using labkit::HostArray;

namespace {

std::string header(std::uint32_t version, std::uint32_t dtype, std::vector<std::uint64_t> shape) {
    std::string s = "CLAB";
    auto put = [&](auto v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(version);
    put(dtype);
    put(static_cast<std::uint32_t>(shape.size()));
    for (auto e : shape) put(e);
    return s;
}

bool throws_with(const std::string& image, const std::string& words) {
    try {
        labkit::parse_array(image, "out.bin");
    } catch (const FormatError& e) {
        return std::string(e.what()).find(words) != std::string::npos;
    }
    return false;
}

}  // namespace

TEST_CASE("test_binary_io_round_trip_keeps_type_shape_and_bits") {
    auto a = HostArray::make<float>("c", {2, 3});
    for (int i = 0; i < 6; ++i) a.as<float>()[i] = static_cast<float>(i) - 2.5f;
    a.as<float>()[5] = -0.0f;
    const auto path = std::filesystem::temp_directory_path() / "labkit_test_roundtrip.c.bin";
    labkit::write_array(path, a);
    const HostArray b = labkit::read_array(path);
    CHECK(b.name == "labkit_test_roundtrip.c");
    CHECK(b.dtype == labkit::DType::f32);
    CHECK(b.shape == std::vector<std::uint64_t>{2, 3});
    CHECK(b.bytes == a.bytes);
    std::filesystem::remove(path);
}

TEST_CASE("test_binary_io_empty_and_scalar_arrays") {
    const auto empty = labkit::parse_array(header(1, 1, {0}), "e");
    CHECK(empty.size() == 0);
    std::string scalar = header(1, 3, {});
    const std::int32_t v = -42;
    scalar.append(reinterpret_cast<const char*>(&v), 4);
    const auto s = labkit::parse_array(scalar, "s");
    CHECK(s.as<std::int32_t>()[0] == -42);
}

TEST_CASE("test_binary_io_rejects_malformed_files_with_reasons") {
    CHECK(throws_with("", "does not start with"));
    CHECK(throws_with("JUNKJUNKJUNK", "does not start with"));
    CHECK(throws_with("CLAB\x01", "ends inside its header"));
    CHECK(throws_with(header(2, 1, {1}) + "abcd", "format version 2"));
    CHECK(throws_with(header(1, 99, {1}) + "abcd", "unknown element type"));
    CHECK(throws_with(header(1, 1, std::vector<std::uint64_t>(9, 1)), "rank 9"));
    CHECK(throws_with(header(1, 1, {4}) + "abcd", "promises 4 elements"));            // truncated
    CHECK(throws_with(header(1, 1, {1}) + "abcdEXTRA", "promises 1 elements"));      // trailing bytes
    CHECK(throws_with(header(1, 2, {1ull << 62, 1ull << 62}), "overflows"));
    CHECK(throws_with(header(1, 1, {1ull << 62}), "promises"));
}

TEST_CASE("test_binary_io_missing_file_is_a_format_error") {
    CHECK_THROWS_AS(labkit::read_array("/nonexistent/labkit/none.bin"), FormatError);
}

TEST_CASE("test_binary_io_read_array_rejects_malformed_files_as_parse_array_does") {
    // read_array parses the header from the file's first bytes and reads the elements
    // straight into the array; its verdicts are parse_array's, in the same words.
    const auto path = std::filesystem::temp_directory_path() / "labkit_test_malformed.c.bin";
    const auto read_says = [&](const std::string& image, const std::string& words) {
        std::ofstream(path, std::ios::binary | std::ios::trunc)
            .write(image.data(), static_cast<std::streamsize>(image.size()));
        try {
            labkit::read_array(path);
        } catch (const FormatError& e) {
            return std::string(e.what()).find(words) != std::string::npos;
        }
        return false;
    };
    CHECK(read_says("", "does not start with"));
    CHECK(read_says("CLAB\x01", "ends inside its header"));
    CHECK(read_says(header(1, 1, {1, 1}).substr(0, 20), "ends inside its header"));
    CHECK(read_says(header(2, 1, {1}) + "abcd", "format version 2"));
    CHECK(read_says(header(1, 1, std::vector<std::uint64_t>(9, 1)), "rank 9"));
    CHECK(read_says(header(1, 1, {4}) + "abcd", "promises 4 elements"));        // truncated
    CHECK(read_says(header(1, 1, {1}) + "abcdEXTRA", "promises 1 elements"));  // trailing bytes
    CHECK(read_says(header(1, 2, {1ull << 62, 1ull << 62}), "overflows"));

    // And a well-formed file of every size from empty up, rank 0 to 8.
    using Shape = std::vector<std::uint64_t>;
    for (const auto& shape : {Shape{0}, Shape{}, Shape{3}, Shape(8, 2)}) {
        auto a = HostArray::make<std::int32_t>("c", shape);
        for (std::size_t i = 0; i < a.size(); ++i) a.as<std::int32_t>()[i] = static_cast<std::int32_t>(7 * i) - 3;
        labkit::write_array(path, a);
        const HostArray b = labkit::read_array(path);
        CHECK(b.shape == shape);
        CHECK(b.bytes == a.bytes);
    }
    std::filesystem::remove(path);
}
