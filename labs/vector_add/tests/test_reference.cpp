// Tests of lab vector_add's reference, which the checker spreads over the cores: on any
// number of parts, including more parts than elements, every element is the float sum the
// plain loop gives.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "labkit/generate.hpp"
#include "labkit/parallel.hpp"
#include "problem.hpp"

TEST_CASE("test_vector_add_reference_in_parts_is_the_plain_loop") {
    for (std::size_t n : {0, 1, 2, 5, 1000, 3 * (1 << 18) + 1}) {
        auto a = labkit::HostArray::make<float>("a", {n});
        auto b = labkit::HostArray::make<float>("b", {n});
        labkit::fill_uniform(a.as<float>(), 4, 0, -1.0f, 1.0f);
        labkit::fill_uniform(b.as<float>(), 4, 1, -1.0f, 1.0f);
        std::vector<double> want(n);
        for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<double>(a.as<float>()[i] + b.as<float>()[i]);
        const labkit::CaseSpec spec{"t", {{"n", static_cast<std::int64_t>(n)}}};
        for (std::size_t parts : {1, 2, 3, 7, 32}) {
            const labkit::ForcedPartsForTesting forced(parts);
            const auto e = lab_vector_add::reference(spec, {a, b});
            REQUIRE(e.size() == 1);
            CHECK_MESSAGE(e[0].values == want, n << " elements in " << parts << " parts");
        }
    }
}
