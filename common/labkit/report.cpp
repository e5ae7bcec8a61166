#include "labkit/report.hpp"

#include <cmath>
#include <fstream>
#include <stdexcept>

namespace labkit {

CaseReport check_case(const Problem& problem, const CaseSpec& spec, const std::vector<Expected>& expected,
                      const std::vector<HostArray>& got) {
    CaseReport report{spec.name, "passed", "", {}};
    for (const Expected& e : expected) {
        const OutputSpec& out = problem.output(e.name);
        const HostArray* mine = nullptr;
        for (const auto& g : got)
            if (g.name == e.name) mine = &g;
        if (!mine) throw std::logic_error("case '" + spec.name + "' produced no output '" + e.name + "'");
        CompareReport r = compare_within_tolerance(e, *mine, out.tolerance);
        if (!r.passed && report.status == "passed") {
            report.status = "failed";
            report.message = r.message;
        }
        report.outputs.push_back(std::move(r));
    }
    if (report.status == "passed") report.message = "all outputs match";
    return report;
}

Json params_json(const CaseSpec& spec) {
    Json p = Json::object();
    for (const auto& [k, v] : spec.params) p[k] = v;
    return p;
}

namespace {
Json mismatch_json(const std::optional<Mismatch>& m) {
    if (!m) return nullptr;
    auto number = [](double v) -> Json { return std::isfinite(v) ? Json(v) : Json(format_value(v)); };
    return Json{{"index", m->index}, {"expected", number(m->expected)}, {"got", number(m->got)},
                {"allowed", number(m->allowed)}};
}
}  // namespace

Json to_json(const CompareReport& r) {
    return Json{{"name", r.output},          {"status", r.passed ? "passed" : "failed"},
                {"checked", r.checked},      {"mismatches", r.mismatches},
                {"message", r.message},      {"first", mismatch_json(r.first)},
                {"worst", mismatch_json(r.worst)}};
}

Json to_json(const CaseReport& report, const CaseSpec& spec) {
    Json outputs = Json::array();
    for (const auto& o : report.outputs) outputs.push_back(to_json(o));
    return Json{{"name", report.name}, {"params", params_json(spec)}, {"status", report.status},
                {"message", report.message}, {"outputs", outputs}};
}

std::filesystem::path dump_path(const std::string& dump_dir, const CaseSpec& spec, const std::string& output) {
    return std::filesystem::path(dump_dir) / (spec.name + "." + output + ".bin");
}

void write_json_file(const std::string& path, const Json& json) {
    std::ofstream out(path, std::ios::trunc);
    if (!out) throw std::runtime_error("cannot open " + path + " for writing");
    out << json.dump(2) << '\n';
    if (!out) throw std::runtime_error("could not write " + path);
}

}  // namespace labkit
