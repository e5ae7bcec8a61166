#include "labkit/cli.hpp"

#include <charconv>
#include <cstddef>
#include <functional>
#include <map>
#include <tuple>

namespace labkit {
namespace {

// One pass over the arguments: flags set a bool, options consume the next argument.
class Parser {
public:
    void flag(const std::string& name, bool* target) { flags_[name] = target; }
    void option(const std::string& name, std::function<void(const std::string&)> take) {
        options_[name] = std::move(take);
    }

    void parse(const std::vector<std::string>& args) const {
        for (std::size_t i = 0; i < args.size(); ++i) {
            const std::string& arg = args[i];
            std::string name = arg, value;
            bool has_inline_value = false;
            if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
                name = arg.substr(0, eq);
                value = arg.substr(eq + 1);
                has_inline_value = true;
            }
            if (auto f = flags_.find(name); f != flags_.end() && !has_inline_value) {
                *f->second = true;
                continue;
            }
            auto o = options_.find(name);
            if (o == options_.end())
                throw UsageError("unknown option '" + arg + "' (try --help)");
            if (!has_inline_value) {
                if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0)
                    throw UsageError("option " + name + " needs a value");
                value = args[++i];
            }
            o->second(value);
        }
    }

private:
    std::map<std::string, bool*> flags_;
    std::map<std::string, std::function<void(const std::string&)>> options_;
};

}  // namespace

std::uint64_t parse_u64(const std::string& text, const std::string& option) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
        throw UsageError(option + " needs a whole number from 0 to 2^64-1, got '" + text + "'");
    return value;
}

int parse_positive_int(const std::string& text, const std::string& option, int min_value) {
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min_value)
        throw UsageError(option + " needs a whole number of at least " + std::to_string(min_value) + ", got '" +
                         text + "'");
    return value;
}

std::pair<unsigned, unsigned> parse_block_shape(const std::string& text, const std::string& option) {
    const auto x = text.find('x');
    const auto bad = [&](const std::string& why) {
        return UsageError(option + " needs a block shape WxH (e.g. 32x8): " + why + ", got '" + text + "'");
    };
    if (x == std::string::npos) throw bad("width and height are separated by 'x'");
    int w = 0, h = 0;
    try {
        w = parse_positive_int(text.substr(0, x), option, 1);
        h = parse_positive_int(text.substr(x + 1), option, 1);
    } catch (const UsageError&) {
        throw bad("W and H are whole numbers of at least 1");
    }
    if (static_cast<long long>(w) * h > 1024) throw bad("a block has at most 1024 threads");
    if ((w * h) % 32 != 0) throw bad("W * H must be a multiple of 32, whole warps");
    return {static_cast<unsigned>(w), static_cast<unsigned>(h)};
}

HarnessOptions parse_harness_options(const std::vector<std::string>& args) {
    HarnessOptions o;
    Parser p;
    p.flag("--bench", &o.bench);
    p.flag("--quiet", &o.quiet);
    bool no_baselines = false;
    p.flag("--no-baselines", &no_baselines);
    p.flag("--paced", &o.paced);
    p.flag("--audit", &o.audit);
    p.flag("--list-cases", &o.list_cases);
    p.flag("--help", &o.help);
    p.flag("-h", &o.help);
    p.option("--case", [&](const std::string& v) { o.cases.push_back(v); });
    p.option("--bench-case", [&](const std::string& v) { o.bench_cases.push_back(v); });
    p.option("--samples", [&](const std::string& v) { o.samples = parse_positive_int(v, "--samples", 1); });
    p.option("--warmup", [&](const std::string& v) { o.warmup = parse_positive_int(v, "--warmup", 0); });
    p.option("--seed", [&](const std::string& v) { o.seed = parse_u64(v, "--seed"); });
    p.option("--dump", [&](const std::string& v) { o.dump_dir = v; });
    p.option("--json", [&](const std::string& v) { o.json_path = v; });
    p.option("--control-in", [&](const std::string& v) { o.control_in = parse_positive_int(v, "--control-in", 0); });
    p.option("--control-out", [&](const std::string& v) { o.control_out = parse_positive_int(v, "--control-out", 0); });
    p.option("--control", [&](const std::string& v) { o.control = parse_positive_int(v, "--control", 0); });
    p.option("--arena", [&](const std::string& v) { o.arena_fd = parse_positive_int(v, "--arena", 0); });
    p.option("--signal", [&](const std::string& v) { o.signal_fd = parse_positive_int(v, "--signal", 0); });
    p.option("--arena-bytes", [&](const std::string& v) { o.arena_bytes = parse_u64(v, "--arena-bytes"); });
    p.option("--slots", [&](const std::string& v) {
        o.slots = parse_positive_int(v, "--slots", 1);
        o.slots_given = true;
    });
    p.option("--block", [&](const std::string& v) { std::tie(o.block_x, o.block_y) = parse_block_shape(v, "--block"); });
    p.parse(args);
    if (!o.bench_cases.empty()) o.bench = true;
    if (o.bench && !o.cases.empty())
        throw UsageError("--case selects correctness cases and --bench runs bench cases: use --bench-case with --bench");
    o.baselines = !no_baselines;
    if (o.paced && o.audit) throw UsageError("--paced and --audit are the two ends of the grader's timing: give one");
    if (o.paced) {
        o.bench = true;
        if (o.bench_cases.size() != 1 || o.control_in < 0 || o.control_out < 0 || o.arena_fd < 0 || o.arena_bytes == 0)
            throw UsageError("--paced is how the grader times a program: it needs exactly one --bench-case, "
                             "--control-in FD, --control-out FD, --arena FD and --arena-bytes N (run --bench "
                             "without --paced to time it yourself)");
        o.baselines = false;
    } else if (o.control_in >= 0 || o.control_out >= 0 || o.arena_fd >= 0 || o.arena_bytes != 0 || o.signal_fd >= 0) {
        throw UsageError("--control-in, --control-out, --arena, --arena-bytes and --signal belong to --paced");
    }
    if (o.audit) {
        o.bench = true;
        if (o.bench_cases.size() != 1 || o.control < 0 || o.dump_dir.empty())
            throw UsageError("--audit is the grader's auditor: it needs exactly one --bench-case, --control FD and "
                             "--dump DIR");
        o.baselines = false;
    } else if (o.control >= 0 || o.slots_given) {
        throw UsageError("--control and --slots belong to --audit");
    }
    return o;
}

CheckerOptions parse_checker_options(const std::vector<std::string>& args) {
    CheckerOptions o;
    bool have_seed = false;
    Parser p;
    p.flag("--help", &o.help);
    p.flag("-h", &o.help);
    p.option("--seed", [&](const std::string& v) { o.seed = parse_u64(v, "--seed"); have_seed = true; });
    p.option("--dump", [&](const std::string& v) { o.dump_dir = v; });
    p.option("--verdict", [&](const std::string& v) { o.verdict_path = v; });
    p.option("--case", [&](const std::string& v) { o.cases.push_back(v); });
    p.option("--bench-case", [&](const std::string& v) { o.bench_cases.push_back(v); });
    p.option("--images", [&](const std::string& v) { o.images_dir = v; });
    p.parse(args);
    if (o.help) return o;
    if (!have_seed) throw UsageError("the checker needs --seed: the seed the outputs were made with");
    if (o.dump_dir.empty()) throw UsageError("the checker needs --dump DIR: the folder the outputs were dumped to");
    if (o.verdict_path.empty()) throw UsageError("the checker needs --verdict FILE: where to write its verdict");
    return o;
}

std::string harness_usage(const std::string& program) {
    return "usage: " + program + " [--case NAME]... [--seed S] [--dump DIR] [--json FILE] [--quiet]\n"
           "       " + program + " --bench [--bench-case NAME]... [--samples K] [--warmup W] [--seed S]\n"
           "               [--dump DIR] [--json FILE] [--no-baselines]\n"
           "       " + program + " --list-cases\n\n"
           "Runs the lab's test cases on your implementation (default), or times it against the\n"
           "device-to-device copy bandwidth and the library (--bench). It does not judge the\n"
           "outputs: `cudalab run` does, with the lab's checker, from what --dump wrote.\n"
           "  --case NAME        run only this case (repeatable); --list-cases shows them\n"
           "  --seed S           input seed (default 1); the grader picks its own\n"
           "  --dump DIR         write every output to DIR/<case>.<output>.bin\n"
           "  --json FILE        write the results as JSON\n"
           "  --samples K        timed samples per bench case (default 30)\n"
           "  --warmup W         untimed runs before sampling (default 5)\n"
           "  --quiet            print only the summary\n"
           "  --no-baselines     time only your code, not the copy roof and the library\n"
           "  --block WxH        launch with this thread-block shape (labs whose API takes one)\n";
}

std::string checker_usage(const std::string& program) {
    return "usage: " + program + " --seed S --dump DIR --verdict FILE [--case NAME]... [--bench-case NAME]...\n"
           "       [--images DIR]\n\n"
           "Regenerates the inputs from the seed, computes the reference on the CPU and compares\n"
           "every dumped output within the lab's tolerance. Without --case it checks every\n"
           "correctness case; bench cases only when named. With --images, every\n"
           "2-D 8-bit input and output (expected_<name>.pgm and the dumped <name>.pgm) of each\n"
           "checked case is written as a PGM under DIR/<case>/.\n";
}

}  // namespace labkit
