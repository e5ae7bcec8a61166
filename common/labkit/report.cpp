#include "labkit/report.hpp"

#include <cmath>
#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>
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
    Json json{{"name", r.output},          {"status", r.passed ? "passed" : "failed"},
              {"checked", r.checked},      {"mismatches", r.mismatches},
              {"message", r.message},      {"first", mismatch_json(r.first)},
              {"worst", mismatch_json(r.worst)}, {"near_miss", r.near_miss}};
    // The whole-output test, where the reference sets one (Expected::rms_limit).
    if (r.rms_limit > 0)
        json["rms_error"] = Json{{"measured", !r.rms_error               ? Json(nullptr)
                                              : std::isfinite(*r.rms_error) ? Json(*r.rms_error)
                                                                             : Json(format_value(*r.rms_error))},
                                 {"limit", r.rms_limit}, {"failed", r.rms_failed}};
    return json;
}

Json to_json(const CaseReport& report, const CaseSpec& spec) {
    Json outputs = Json::array();
    for (const auto& o : report.outputs) outputs.push_back(to_json(o));
    return Json{{"name", report.name}, {"params", params_json(spec)}, {"status", report.status},
                {"message", report.message}, {"outputs", outputs},
                {"changes_between_runs", report.changes_between_runs}};
}

std::filesystem::path dump_path(const std::string& dump_dir, const CaseSpec& spec, const std::string& output,
                                int run) {
    const std::string suffix = run <= 1 ? ".bin" : ".run" + std::to_string(run) + ".bin";
    return std::filesystem::path(dump_dir) / (spec.name + "." + output + suffix);
}

std::optional<std::uint64_t> first_bitwise_difference(const HostArray& a, const HostArray& b) {
    if (a.dtype != b.dtype || a.bytes.size() != b.bytes.size()) return 0;
    const std::size_t width = dtype_size(a.dtype);
    for (std::size_t offset = 0; offset < a.bytes.size(); offset += width)
        if (std::memcmp(a.bytes.data() + offset, b.bytes.data() + offset, width) != 0) return offset / width;
    return std::nullopt;
}

CaseReport worse_of_two_runs(const CaseReport& first, const CaseReport& second,
                             const std::vector<HostArray>& got_first, const std::vector<HostArray>& got_second,
                             const std::vector<Expected>& expected) {
    CaseReport worse = (first.status == "passed" && second.status != "passed") ? second : first;
    for (std::size_t k = 0; k < got_first.size() && k < got_second.size(); ++k) {
        const HostArray& a = got_first[k];
        const HostArray& b = got_second[k];
        const auto at = first_bitwise_difference(a, b);
        if (!at) continue;
        worse.changes_between_runs = true;
        std::ostringstream msg;
        const bool comparable = a.bytes.size() == b.bytes.size() && a.dtype == b.dtype && *at < a.size();
        msg << "The answer changes from run to run: the same inputs gave ";
        if (comparable)
            msg << describe_index(a.name, a.shape, *at) << " = " << format_value(element_value(a, *at))
                << " on the first run and " << format_value(element_value(b, *at)) << " on the second";
        else
            msg << "outputs of different sizes";
        msg << ". Its float additions happen in an order that depends on timing (atomicAdd into one float, or "
               "blocks combining in whatever order they finish), so each run rounds differently and a grade "
               "would depend on luck: the case is judged on the worse run, with the spread between runs counted "
               "against the bound. ";
        if (worse.status != "passed") {
            worse.message = msg.str() + worse.message;
            break;
        }
        // Both runs pass on their own: the next run may land as far beyond the worse one as
        // the two are apart, so that distance counts against the bound.
        const Expected* e = nullptr;
        for (const auto& candidate : expected)
            if (candidate.name == a.name) e = &candidate;
        if (comparable && e != nullptr && e->allowed_abs.size() == a.size()) {
            const bool has_near = e->near_miss_abs.size() == a.size();
            for (std::uint64_t i = 0; i < a.size(); ++i) {
                const double x = element_value(a, i), y = element_value(b, i), want = e->values[i];
                const double off = std::max(std::fabs(x - want), std::fabs(y - want));
                const double spread = std::fabs(x - y);
                // Where a chain in timing order can go beyond what a tree stays within, an
                // answer that moves between runs fails whatever this pair of runs gave: its
                // error depends on the input and on timing, not on the code alone.
                if (spread > 0.0 && e->fixed_order && has_near && e->near_miss_abs[i] > e->allowed_abs[i]) {
                    worse.status = "failed";
                    msg << "At " << describe_index(a.name, a.shape, i) << " the two runs differ by "
                        << format_value(spread) << " (off by " << format_value(std::fabs(x - want)) << " and "
                        << format_value(std::fabs(y - want)) << "): the additions are chained in an order that "
                        << "changes with timing, and at this size such a chain can be off by up to "
                        << format_value(e->near_miss_abs[i]) << ", beyond the " << format_value(e->allowed_abs[i])
                        << " a tree of additions stays within, so this case fails whatever one run gives.";
                    if (!e->near_miss_advice.empty()) {
                        const std::string advice = e->near_miss_advice;
                        // The advice without its last sentence (an answer that moves between
                        // runs is no tree, so "if your code already does" does not apply).
                        const auto combine = advice.find(": combine");
                        const auto already = advice.find(" If your code already does");
                        if (combine != std::string::npos)
                            msg << " Instead" << advice.substr(combine + 1, already == std::string::npos
                                                                                 ? std::string::npos
                                                                                 : already - combine - 1);
                    }
                    break;
                }
                if (off + spread <= e->allowed_abs[i]) continue;
                worse.status = "failed";
                msg << "At " << describe_index(a.name, a.shape, i) << " the runs are off by "
                    << format_value(std::fabs(x - want)) << " and " << format_value(std::fabs(y - want))
                    << " and differ by " << format_value(spread) << ", so a run can be off by about "
                    << format_value(off + spread) << ", more than the " << format_value(e->allowed_abs[i])
                    << " a tree of additions stays within here.";
                if (!e->near_miss_advice.empty()) {
                    std::string advice = near_miss_advice_at(*e, i);  // "a long chain ...": a sentence of its own here
                    advice[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(advice[0])));
                    msg << ' ' << advice;
                }
                break;
            }
        }
        worse.message = msg.str() + (worse.status == "passed" ? "Both runs, and their spread, are within the bound." : "");
        break;
    }
    return worse;
}

void write_json_file(const std::string& path, const Json& json) {
    std::ofstream out(path, std::ios::trunc);
    if (!out) throw std::runtime_error("cannot open " + path + " for writing");
    out << json.dump(2) << '\n';
    if (!out) throw std::runtime_error("could not write " + path);
}

}  // namespace labkit
