// Checking one case's outputs against its reference, and the JSON both the harness and
// the checker write (schemas cudalab.run/1 and cudalab.verdict/1, docs/architecture.md).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "labkit/compare.hpp"
#include "labkit/problem.hpp"

namespace labkit {

using Json = nlohmann::ordered_json;

inline constexpr const char* kRunSchema = "cudalab.run/1";
inline constexpr const char* kVerdictSchema = "cudalab.verdict/1";

struct CaseReport {
    std::string name;
    std::string status;  // passed | failed | missing | malformed | inconsistent (a timed sample changed after it ended)
    std::string message;
    std::vector<CompareReport> outputs;
};

// Compares each Expected with the output of the same name.
CaseReport check_case(const Problem& problem, const CaseSpec& spec, const std::vector<Expected>& expected,
                      const std::vector<HostArray>& got);

Json params_json(const CaseSpec& spec);
Json to_json(const CompareReport& report);
Json to_json(const CaseReport& report, const CaseSpec& spec);

// The file one output of one case is dumped to and checked from: DIR/<case>.<output>.bin.
std::filesystem::path dump_path(const std::string& dump_dir, const CaseSpec& spec, const std::string& output);

// Writes JSON to a file, pretty-printed; throws std::runtime_error on failure.
void write_json_file(const std::string& path, const Json& json);

}  // namespace labkit
