"""The docs and the tool agree. What the prose repeats of the code (README.md, grader/README.md,
docs/, the handouts as the repository and a student bundle hand them out, the bundle's README,
the starters' comments and every `cudalab VERB --help`) is read out of it and compared with the
code that defines it: Config's defaults (slots per GPU, the timing target, timing rounds, kept
samples), the labs' lab.toml, the constants of the grader and labkit, the verbs and their
options, the environment variables, the exit codes and statuses, the files and names the docs
point to, and the versions the build requires. Changing any of them without its documentation
fails here."""
from __future__ import annotations

import argparse
import dataclasses
import functools
import itertools
import math
import re
from unittest import mock

import pytest

from cudalab.building import bundle
from cudalab.grading import calibration
from cudalab import cli
from cudalab.outputs import export, handout
from cudalab.lab import labs, labspec
from cudalab.config import GIB, KIB, MIB, Config
from cudalab.exit_codes import Cli, Harness
from cudalab.status import Status
from conftest import REPO_ROOT

DOCS = ("README.md", "grader/README.md", "docs/architecture.md")
DEFAULTS = {f.name: f.default for f in dataclasses.fields(Config) if f.default is not None}
WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
UNITS = {None: 1, "s": 1, "KiB": KIB, "MiB": MIB, "GiB": GIB}

# `setting` or `CUDALAB_SETTING`, then its value: "`gpu_slots` (3)", "`timing_rounds`, 3",
# "`kept_samples`: 2", "`CUDALAB_HANDIN_MAX_TOTAL_BYTES` (8 MiB)", "`run_folder_files`, 100 000".
SETTING_VALUE = re.compile(r"`(?:CUDALAB_)?(?P<name>[A-Za-z_]+)`(?:,|:)? \(?"
                           r"(?P<value>\d{1,3}(?: \d{3})+\b|\d+(?:\.\d+)?)"
                           r"(?: (?P<unit>s|KiB|MiB|GiB)\b)?")


def prose(name: str) -> str:
    """A document with every run of whitespace made one space (sentences wrap anywhere)."""
    return " ".join((REPO_ROOT / name).read_text(encoding="utf-8").split())


def number(text: str) -> int:
    return WORDS[text.lower()] if text.lower() in WORDS else int(text)


def lab_kept_samples() -> dict[str, int]:
    """The labs whose lab.toml asks for another number of kept samples than the default."""
    specs = (labspec.load(p) for p in sorted((REPO_ROOT / "labs").glob("*/lab.toml")))
    return {spec.name: spec.scoring.kept_samples for spec in specs if spec.scoring.kept_samples}


def settings_in_prose() -> list[tuple[str, str, float]]:
    found = []
    for doc in DOCS:
        for match in SETTING_VALUE.finditer(prose(doc)):
            name = match["name"].lower()
            if name in DEFAULTS:
                found.append((doc, name, float(match["value"].replace(" ", "")) * UNITS[match["unit"]]))
    return found


def test_every_setting_the_prose_gives_a_value_has_that_value_in_config():
    found = settings_in_prose()
    wrong = [f"{doc}: `{name}` is written as {value:g}, but Config's default is {DEFAULTS[name]}"
             for doc, name, value in found if value != DEFAULTS[name]]
    assert not wrong, "\n".join(wrong)
    assert {"gpu_slots", "timing_rounds", "kept_samples", "timing_target_s"} <= {name for _, name, _ in found}, \
        "the prose no longer states these defaults where this test looks for them"


def test_grades_sharing_a_gpu_in_words_are_the_gpu_slots():
    said = [(doc, match[1]) for doc in ("README.md", "grader/README.md")
            for match in re.finditer(r"\b(\w+) grades (?:in turn|per GPU)", prose(doc))]
    assert len(said) == 2, said
    for doc, words in said:
        assert number(words) == DEFAULTS["gpu_slots"], f"{doc}: '{words} grades' per GPU"


def test_the_labs_that_keep_other_numbers_of_samples_are_named_with_their_number():
    text = prose("docs/architecture.md")
    match = re.search(r"`kept_samples`: (\d+)((?:, \w+ \d+)+)\)", text)
    assert match and int(match[1]) == DEFAULTS["kept_samples"]
    named = {lab: int(kept) for lab, kept in re.findall(r", (\w+) (\d+)", match[2])}
    assert lab_kept_samples() == named


def test_the_detection_table_follows_each_labs_quantile_and_kept_samples():
    """docs/architecture.md's "Detection" table gives each lab's scored quantile q, its kept
    samples K (R - 1) and the odds 1 - (1 - q)^(K (R - 1)) that they catch a shortcut taken
    in a fraction q of the calls; every number in it follows from Config and lab.toml."""
    from cudalab.grading.timing import SCORED_QUANTILE
    lines = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("| lab | `q` | `K (R - 1)` | caught at `f` = `q` |")
    table = list(itertools.takewhile(lambda line: line.startswith("|"), lines[start + 2:]))
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table]
    specs = {spec.name: spec for spec in (labspec.load(p) for p in sorted((REPO_ROOT / "labs").glob("*/lab.toml")))}
    named = []
    for names, q_text, draws_text, odds_text in rows:
        q = float(q_text.split()[0])
        for name in (n.strip().lower() for n in names.split(",")):
            named.append(name)
            spec = specs[name]
            assert spec.scoring.quantile(SCORED_QUANTILE) == q, f"{name}: the table says q = {q}"
            if spec.every_output_exact:
                assert draws_text == "every sample (exact outputs)" and odds_text == "100 %", name
                continue
            k = spec.scoring.kept(DEFAULTS["kept_samples"])
            rounds = spec.scoring.rounds(DEFAULTS["timing_rounds"])
            assert draws_text == f"{k} × {rounds - 1} = {k * (rounds - 1)}", f"{name}: {draws_text}"
            percent = re.search(r"(\d+(?:\.\d)?) %", odds_text)
            exact = 100 * (1 - (1 - q) ** (k * (rounds - 1)))
            places = len(percent[1].split(".")[1]) if "." in percent[1] else 0
            assert float(percent[1]) == round(exact, places), f"{name}: {odds_text} (it is {exact:.2f} %)"
    assert sorted(named) == sorted(specs), "the table names every lab once"


def test_the_readmes_requirements_name_every_python_dependency():
    """The Requirements paragraph lists what grader/pyproject.toml installs, tests' extras too."""
    import tomllib
    project = tomllib.loads((REPO_ROOT / "grader" / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + [d for extra in project["optional-dependencies"].values() for d in extra]
    names = {re.split(r"[<>=!~\[ ]", d, maxsplit=1)[0].lower() for d in wanted}
    section = prose("README.md").split("## Requirements", 1)[1].split("##", 1)[0].lower()
    missing = sorted(name for name in names if name not in section)
    assert not missing, f"README.md's Requirements do not name {missing}"


def test_the_readme_names_the_bundles_verbs_as_the_bundle_offers_them():
    from cudalab.building import bundle
    said = re.search(r"offers the student verbs only \(([^)]*)\)", prose("README.md"))
    assert said, "README.md no longer says which verbs a student bundle offers"
    assert re.findall(r"`(\w+)`", said[1]) == list(bundle.STUDENT_VERBS)


# --- what every document names: verbs, options, settings, exit codes, statuses ------------------
#
# Each check below reads every place a user reads (READMEs, docs/, the handouts as the repository
# and a bundle hand them out, the bundle's README, the starters' comments and `cudalab VERB --help`)
# and holds whatever it names to the code that defines it, so that a renamed option, a new exit
# code or a verb a bundle lacks fails here instead of misleading a reader.

@functools.cache
def verb_parsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.make_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(verbs.choices)


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """A parser's options, and those of its actions' own parsers (`cudalab course init ...`)."""
    found = {o for action in parser._actions for o in action.option_strings}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _options(sub)
    return found


def verb_options() -> dict[str, set[str]]:
    return {verb: _options(sub) for verb, sub in verb_parsers().items()}


def help_texts() -> dict[str, str]:
    """What `cudalab VERB --help` prints, per verb (its description and every option's help)."""
    return {f"cudalab {verb} --help": sub.format_help() for verb, sub in verb_parsers().items()}


@functools.cache
def rendered_bundle_handouts() -> dict[str, str]:
    """Each lab's handout as a student bundle hands it out, rendered as if every calibration had
    been measured on other inputs than today's (the sentence that names a verb to fix that)."""
    config = Config.load(env={}, root=REPO_ROOT, preset="ci")
    stale = [{"name": "n_stale", "then": "n=1", "now": "n=2"}]
    rendered = {}
    with mock.patch.object(calibration, "measured_on_other_inputs", lambda entry, spec: stale):
        for name in labs.available_labs(REPO_ROOT):
            spec = labs.load_lab(config, name)
            known = calibration.read(spec.folder / calibration.FILE_NAME, spec.name)
            rendered[f"handouts/{name}.md (in a bundle)"] = handout.render_markdown(spec, known, for_bundle=True)
    return rendered


@functools.cache
def bundle_readme() -> str:
    config = Config.load(env={}, root=REPO_ROOT, preset="ci")
    return export.render_readme([labs.load_lab(config, name) for name in labs.available_labs(REPO_ROOT)], version="0.1.0")


@functools.cache
def documents() -> dict[str, str]:
    """Every text a user reads, by where it is read."""
    docs = {name: (REPO_ROOT / name).read_text(encoding="utf-8")
            for name in ("README.md", "grader/README.md", "docs/architecture.md", "docs/extending.md")}
    docs.update({str(p.relative_to(REPO_ROOT)): p.read_text(encoding="utf-8")
                 for p in sorted((REPO_ROOT / "handouts").glob("*.md"))})
    docs.update({str(p.relative_to(REPO_ROOT)): "\n".join(line.lstrip("/ ") for line in p.read_text(encoding="utf-8")
                                                         .splitlines() if line.lstrip().startswith("//"))
                 for p in sorted((REPO_ROOT / "starter").glob("*/*.cu"))})
    docs["the bundle's README.md"] = bundle_readme()
    docs.update(rendered_bundle_handouts())
    docs.update(help_texts())
    return docs


FENCE = re.compile(r"^\s*```[^\n]*\n(.*?)^\s*```", re.S | re.M)


def code_spans(text: str) -> list[str]:
    """The code a document shows: each line of a fenced block, each `inline span`, and each
    indented line that starts with `cudalab ` (a help text's usage lines)."""
    spans = [line for block in FENCE.findall(text) for line in block.splitlines()]
    rest = FENCE.sub("", text)
    spans += [line.strip() for line in rest.splitlines() if re.match(r"\s+cudalab ", line)]
    spans += re.findall(r"`([^`]+)`", " ".join(rest.split()))
    return spans


def commands(span: str) -> list[tuple[str, str]]:
    """(verb, the words after it) for each `cudalab VERB ...` in a span of code, its shell
    comment left out."""
    code = re.split(r"\s#\s", span)[0]
    return [(m["verb"], m["rest"]) for m in re.finditer(r"(?<![\w./-])(?:\S*/)?cudalab (?P<verb>[a-z][\w-]*)(?P<rest>[^;`]*)",
                                                        code) if not m["verb"].startswith(("labspec", "pacer", "slurm", "sdk"))]


def options(words: str) -> list[str]:
    """The options in a command's words: `--name` or `-n`, without a value written with `=`;
    an option given as another program's value (`--sbatch-arg=--time=...`) is that program's."""
    return re.findall(r"(?<![\w=-])(--?[a-zA-Z][\w-]*)", words)


def test_every_cudalab_command_the_docs_show_is_a_verb_with_those_options():
    known = verb_options()
    wrong = []
    for where, text in documents().items():
        for span in code_spans(text):
            for verb, words in commands(span):
                if verb not in known:
                    wrong.append(f"{where}: `{span}` names `cudalab {verb}`, which is no verb (cli.VERBS)")
                    continue
                wrong += [f"{where}: `{span}` gives `cudalab {verb}` the option {option}, which it does not take"
                          for option in options(words) if option not in known[verb]]
    assert not wrong, "\n".join(wrong)


def option_defined_in_code(option: str) -> bool:
    """Whether some program of the repository defines `option`: a verb's argparse, a lab binary's
    or checker's parser (common/labkit), a tool's, a CMake script's."""
    if any(option in opts for opts in verb_options().values()):
        return True
    for folder, suffixes in (("common", (".cpp", ".hpp", ".cu")), ("tools", (".py", ".sh")),
                             ("grader/cudalab", (".py",)), ("cmake", (".cmake", ".txt"))):
        for path in (REPO_ROOT / folder).rglob("*"):
            if path.suffix in suffixes and f'"{option}' in path.read_text(encoding="utf-8", errors="replace"):
                return True
    return False


def test_every_option_the_docs_name_is_defined_by_a_program_of_the_repository():
    named = {(where, option) for where, text in documents().items() if not where.endswith("--help")
             for span in code_spans(text) for option in options(span) if option.startswith("--")}
    missing = sorted(f"{where}: {option}" for where, option in named if not option_defined_in_code(option))
    assert not missing, "options no program of the repository takes:\n" + "\n".join(missing)


def test_every_variable_the_docs_name_is_a_setting_or_read_by_the_code():
    """`CUDALAB_<NAME>` is a Config setting where NAME is one of its fields; the others the docs
    name (the harness's CUDALAB_GPU_MEMORY_LIMIT, CMake's CUDALAB_STUDENT_BUNDLE, the tests'
    switches, tools/gpu-check.sh's GPU_CHECK_*) must be read somewhere, under that exact name."""
    fields = {f"CUDALAB_{f.name.upper()}" for f in dataclasses.fields(Config)}
    sources = [p for folder in ("common", "tools", "grader", "cmake") for p in (REPO_ROOT / folder).rglob("*")
               if p.suffix in (".py", ".sh", ".cpp", ".hpp", ".cu", ".cmake", ".txt", ".j2")]
    code = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sources) + \
        (REPO_ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    unknown = sorted({f"{where}: {name}" for where, text in documents().items()
                      for name in re.findall(r"\b(?:CUDALAB|GPU_CHECK)_[A-Z0-9_]*[A-Z0-9]\b", text)
                      if name not in fields and not re.search(rf"\b{name}\b", code)})
    assert not unknown, "variables neither Config nor any program reads:\n" + "\n".join(unknown)


# What each CLI exit code is about, in words any sentence that names it uses.
CLI_CODE_WORDS = {
    Cli.UNKNOWN_LAB: ("unknown lab",),
    Cli.SUBMISSION_INVALID: ("missing", "symlink", "refused", "file"),
    Cli.COMPILE_ERROR: ("compile", "symbol"),
    Cli.NO_DEVICE: ("no cuda device", "no gpu", "without a gpu", "not_run"),
    Cli.INTERNAL: ("grader", "build", "tool"),
    Cli.NOT_ISOLATED: ("sandbox",),
    Cli.FORBIDDEN: ("forbid",),
    Cli.REJECTED: ("accepted", "reject", "leak", "finding"),
    Cli.SERVICE_UNREACHABLE: ("no answer", "cannot be reached", "unreachable"),
    Cli.SERVICE_REFUSED: ("refuses", "refused by the course service"),
}


def test_every_cli_exit_code_the_docs_name_is_one_with_that_meaning():
    """"exit 25", "exits 23", "(exit 27": each names a code of exit_codes.Cli, in a sentence about
    what that code means."""
    wrong, seen = [], set()
    for where, text in documents().items():
        flat = " ".join(text.split())
        for match in re.finditer(r"\bexit(?:s| with| code)? (\d{2,3})\b", flat):
            code = int(match[1])
            if code in (130, 141):  # interrupted, or its reader gone: as a shell reports signals
                continue
            if code not in set(Cli):
                wrong.append(f"{where}: '{match[0]}' is no exit code of cudalab (exit_codes.Cli)")
                continue
            seen.add(code)
            sentence = flat[max(0, match.start() - 160):match.end() + 160].lower()
            if not any(word in sentence for word in CLI_CODE_WORDS.get(Cli(code), ())):
                wrong.append(f"{where}: '{match[0]}' is {Cli(code).name}, but the sentence is about something else: "
                             f"...{flat[max(0, match.start() - 80):match.end() + 40]}...")
    assert not wrong, "\n".join(wrong)
    assert {Cli.NO_DEVICE, Cli.NOT_ISOLATED, Cli.REJECTED} <= seen


def test_the_exit_code_paragraph_gives_every_cli_code_its_meaning():
    """grader/README.md's "Exit codes": '20 for an unknown lab, 21 when ...', one per code."""
    section = prose("grader/README.md").split("### Exit codes", 1)[1].split("`batch` exits", 1)[0]
    said = {int(m[1]): m[2].lower() for m in re.finditer(r"\b(\d+) (?:on|for|when) ([^,]+)", section)}
    assert set(said) == {int(c) for c in Cli}, said
    for code, words in said.items():
        if code in (Cli.DONE, Cli.USAGE):
            assert Cli(code).name.lower() in words, f"{code}: '{words}'"
        else:
            assert any(w in words for w in CLI_CODE_WORDS[Cli(code)]), f"{code}: '{words}'"


def test_the_exit_code_table_is_the_harness_codes():
    section = prose("docs/architecture.md").split("## Exit codes", 1)[1].split("## The lab binary", 1)[0]
    table = {int(m[1]): m[2] for m in re.finditer(r"\| (\d+) \| (\w+) \|", section)}
    assert table == {int(code): code.status for code in Harness}


def test_run_passes_through_the_harness_codes_the_readme_names():
    said = re.search(r"`run` passes the lab binary's own code through \(([^)]*)\)", prose("grader/README.md"))
    assert said, "grader/README.md no longer says which codes `run` passes through"
    codes = {int(m[1]): m[2].lower() for m in re.finditer(r"(\d+) ([\w ]+?)(?:,|$)", said[1])}
    assert codes == {int(c): c.name.replace("_", " ").lower() for c in Harness
                     if c not in (Harness.USAGE, Harness.NO_DEVICE)}, codes


def test_every_status_the_docs_name_is_one_a_result_can_have():
    """"status `not_run`": a grade's status (status.py), or a run's or checker's word (exit_codes.Harness)."""
    words = {s.value for s in Status} | {c.status for c in Harness}
    wrong = sorted({f"{where}: status `{word}`" for where, text in documents().items()
                    for word in re.findall(r"status `(\w+)`", " ".join(text.split())) if word not in words})
    assert not wrong, "statuses no result has:\n" + "\n".join(wrong)


def test_every_numeric_default_a_help_text_gives_is_the_options_default():
    """`--samples` "(default 30)" in `cudalab calibrate --help` is argparse's default."""
    wrong = []
    for verb, sub in verb_parsers().items():
        for action in sub._actions:
            said = re.search(r"\(default:? (\d+(?:\.\d+)?)\b", action.help or "")
            # None: the option's default is applied where it is used (an executor's options are
            # None unless given, so that another executor's can be told apart)
            if said and action.default is not None and float(said[1]) != action.default:
                wrong.append(f"cudalab {verb} {'/'.join(action.option_strings)}: its help says default {said[1]}, "
                             f"argparse's default is {action.default!r}")
    assert not wrong, "\n".join(wrong)


def test_a_bundles_texts_name_only_the_verbs_a_bundle_offers():
    """A student bundle offers bundle.STUDENT_VERBS only: its handouts name no other verb, and its
    README names another only to say it is not there."""
    wrong = [f"{where}: `{span}`" for where, text in rendered_bundle_handouts().items() for span in code_spans(text)
             for verb, _ in commands(span) if verb not in bundle.STUDENT_VERBS]
    assert not wrong, "a bundle's handout names a verb it does not offer:\n" + "\n".join(wrong)
    readme = bundle_readme()
    for verb in sorted(set(cli.VERBS) - set(bundle.STUDENT_VERBS)):
        for match in re.finditer(rf"cudalab {verb}\b", readme):
            sentence = readme[max(0, match.start() - 300):match.end() + 300]
            assert re.search(r"[Nn]ot here|only in the course's|not part of this", sentence), \
                f"the bundle's README names `cudalab {verb}` as if a bundle had it"


def test_the_students_commands_in_the_readme_are_the_bundles():
    """README.md's "For students" says its commands work as written in a bundle: each verb of its
    blocks is one a bundle offers."""
    section = (REPO_ROOT / "README.md").read_text(encoding="utf-8").split("## For students", 1)[1].split("\n## ", 1)[0]
    verbs = [verb for block in FENCE.findall(section) for line in block.splitlines() for verb, _ in commands(line)]
    assert verbs and not [verb for verb in verbs if verb not in bundle.STUDENT_VERBS], verbs


def test_what_the_bundle_readme_says_its_handouts_name_they_name():
    readme = " ".join(bundle_readme().split())
    handouts = "\n".join(rendered_bundle_handouts().values())
    for said in re.finditer(r"handouts (?:also )?name ([^.:]*)", readme):
        for verb in re.findall(r"`cudalab (\w+)`", said[1]):
            assert f"cudalab {verb}" in handouts, f"the bundle's README says its handouts name `cudalab {verb}`"


def test_the_result_examples_statuses_are_the_schemas():
    """grader/README.md's example of a cudalab.grade/1 result spells out each status's values
    ("graded|not_run|..."): they are the schema's, which status.py and grade.py write."""
    import json
    schema = json.loads((REPO_ROOT / "grader/cudalab/schemas/grade.schema.json").read_text(encoding="utf-8"))
    example = prose("grader/README.md").split("## Result schema `cudalab.grade/1`", 1)[1].split("```", 2)[1]
    wanted = {"status": schema["properties"]["status"]["enum"],
              "performance": schema["properties"]["performance"]["properties"]["status"]["enum"],
              "cases": schema["$defs"]["case"]["properties"]["status"]["enum"]}
    for key, values in wanted.items():
        said = re.search(rf'"{key}": \[?\{{?(?:"name": "[^"]*", "params": \{{[^}}]*\}}, )?"?(?:status": )?"([a-z_|]+)"',
                         example)
        assert said, f"the example no longer spells out {key}'s statuses"
        assert sorted(said[1].split("|")) == sorted(values), f"{key}: {said[1]} in the example, {values} in the schema"
    assert sorted(schema["properties"]["status"]["enum"]) == sorted(s.value for s in Status)


def test_the_hostile_suite_is_said_to_cover_the_labs_it_covers():
    said = re.search(r"buggy and cheating submissions for every lab but (\w+)", prose("grader/README.md"))
    assert said, "grader/README.md no longer says which labs the hostile suite covers"
    covered = {p.name for p in (REPO_ROOT / "grader/tests/submissions").iterdir() if p.is_dir()}
    assert set(labs.available_labs(REPO_ROOT)) - covered == {said[1]}


def cpp_constant(header: str, name: str) -> float:
    """A numeric `constexpr` of common/labkit: `kName = std::size_t{256} << 20;` is 268435456."""
    text = (REPO_ROOT / "common" / "labkit" / header).read_text(encoding="utf-8")
    expression = re.search(rf"\b{name} = ([^;]+);", text)[1]
    expression = re.sub(r"std::\w+[({]([\d.]+)[)}]", r"\1", expression)
    assert re.fullmatch(r"[\d.\s<*+]+", expression), f"{header}: {name} = {expression} is no plain number"
    return eval(expression)  # digits and operators only, checked above


def constants_in_prose():
    """(document, what it says in the words around the numbers, the numbers the code defines)."""
    from cudalab.intake import object_analysis
    from cudalab.isolation import runner
    from cudalab.grading import timing
    limits = object_analysis.DEFAULT_LIMITS
    return [
        ("docs/architecture.md", r"Objects far beyond anything a lab compiles to \((\d+) MiB, (\d[\d ]*) symbols, "
         r"(\d[\d ]*) sections\)", (limits.object_bytes / MIB, limits.symbols, limits.sections)),
        ("docs/architecture.md", r"less a margin of (\d+) % plus (\d+) MiB",
         (cpp_constant("memory_fit.hpp", "kMemoryMarginPercent"), cpp_constant("memory_fit.hpp", "kMemoryMarginBytes") / MIB)),
        ("docs/architecture.md", r"within (\d+) % RMS of the reference on the whole \(outputs of (\d+) elements",
         (cpp_constant("audit.hpp", "kScreenRelativeRms") * 100, cpp_constant("audit.hpp", "kScreenMinElements"))),
        ("docs/architecture.md", r"up to 2\^(\d+) pixels",
         (math.log2(cpp_constant("checker.cpp", "kMaxImagePixels")),)),
        ("docs/architecture.md", r"ratio after (\d+) timed samples of a round", (timing.TooSlow.after,)),
        ("grader/README.md", r"\(after (\d+) timed samples\)", (timing.TooSlow.after,)),
        ("grader/README.md", r"at most (\d+) MiB, and never decides a grade", (runner._JSON_LIMIT / MIB,)),
        ("grader/README.md", r"stdout and stderr drained and capped \((\d+) KiB each\)",
         (DEFAULTS["output_cap_bytes"] / KIB,)),
        ("grader/README.md", r"`RLIMIT_FSIZE` \((\d+) GiB\)", (DEFAULTS["file_size_limit_bytes"] / GIB,)),
        ("grader/README.md", r"`RLIMIT_CPU` \((\d+) × the wall limit\)", (DEFAULTS["cpu_time_factor"],)),
        ("grader/README.md", r"keeps the first (\d+) compiler lines", (DEFAULTS["compile_feedback_lines"],)),
        ("grader/README.md", r"runs of (\d+) or more identifiers and numbers", (export.MIN_LEAK_TOKENS,)),
        ("README.md", r"`\[scoring\] time_limit_s`, (\d+) s", (labspec.Scoring.time_limit_s,)),
        ("docs/architecture.md", r"`\[scoring\] time_limit_s` \((\d+) s unless lab.toml says otherwise\)",
         (labspec.Scoring.time_limit_s,)),
    ]


@pytest.mark.parametrize("doc,words,values", constants_in_prose(), ids=lambda v: v if isinstance(v, str) else "")
def test_each_number_the_prose_gives_of_a_constant_is_the_codes(doc, words, values):
    said = re.search(words, prose(doc))
    assert said, f"{doc} no longer says '{words}' (reworded? update this test with it)"
    assert tuple(float(n.replace(" ", "")) for n in said.groups()) == tuple(float(v) for v in values), \
        f"{doc}: '{said[0]}', but the code defines {values}"


def test_the_verb_table_gives_every_verb_with_every_option_it_takes():
    """grader/README.md's table of verbs: a row per verb of cli.VERBS, and each row names every
    option its parser takes (besides --help, and --json and --preset, which the text above the
    table gives every verb)."""
    rows = {m[1]: m[0] for m in re.finditer(r"^\| `cudalab (\w+)[^\n]*", (REPO_ROOT / "grader/README.md")
                                           .read_text(encoding="utf-8"), re.M)}
    assert sorted(rows) == sorted(cli.VERBS)
    missing = [f"`cudalab {verb}`'s row does not name {option}" for verb, opts in verb_options().items()
               for option in sorted(opts - {"-h", "--help", "--json", "--preset"})
               if not re.search(rf"{re.escape(option)}(?![\w-])", rows[verb])]
    assert not missing, "\n".join(missing)


# Where the docs name a path by its folder inside grader/ or common/ ("cudalab/config.py").
PATH_BASES = {"cudalab/": "grader/", "labkit/": "common/", "tests/": "grader/"}
FILE_SUFFIXES = ("py", "json", "md", "html", "j2", "toml", "csv", "txt", "cmake", "sh", "cu", "hpp", "cpp", "in")


def test_every_file_and_test_the_docs_name_exists():
    """`grader/cudalab/isolation/sandbox.py`, `labkit/audit.hpp`, `tests/test_layering.py`,
    `grader/tests/test_extending.py::test_...`: each is there (a template path with `<lab>`
    in it is a pattern, not a file)."""
    missing = []
    for where, text in documents().items():
        for span in code_spans(text):
            for named in re.findall(r"(?<![\w/.<-])((?:grader|common|tools|cmake|labs|docs|handouts|starter|solutions|"
                                    r"datasets|cudalab|labkit|tests)/[\w./:-]*[\w/])", span):
                if "<" in named:
                    continue
                path, _, test = named.partition("::")
                found = [p for p in [REPO_ROOT / path] + [REPO_ROOT / (base + path) for folder, base in
                                                           PATH_BASES.items() if path.startswith(folder)] if p.exists()]
                if not found:
                    missing.append(f"{where}: {named}")
                elif test and not re.search(rf"^def {test}\(", found[0].read_text(encoding="utf-8"), re.M):
                    missing.append(f"{where}: {named} (no such test)")
    assert not missing, "the docs name what is not there:\n" + "\n".join(missing)


def test_every_name_of_the_grader_the_docs_give_exists():
    """`executor.LocalExecutor`, `publish.CLASS_OUTPUTS`, `grade.begin`: a module of the grader
    with that name in it, so that renaming one fails here until the docs say the new name."""
    import importlib
    import pkgutil
    import cudalab
    modules = {m.name for m in pkgutil.iter_modules(cudalab.__path__)}
    missing = []
    for where, text in documents().items():
        for span in code_spans(text):
            for module, attribute in re.findall(r"(?<![\w./\[-])([a-z_]+)\.([A-Za-z_][\w.]*[\w])", span):
                if module not in modules or attribute.split(".")[0] in FILE_SUFFIXES:
                    continue
                found = importlib.import_module(f"cudalab.{module}")
                for part in attribute.split("."):
                    found = getattr(found, part, None)
                if found is None:
                    missing.append(f"{where}: {module}.{attribute}")
    assert not missing, "the docs name what the grader does not have:\n" + "\n".join(missing)


def required_versions() -> dict[str, str]:
    """What the build and the grader require, from where each is enforced."""
    import tomllib
    from cudalab.isolation import doctor
    cmake = re.search(r"cmake_minimum_required\(VERSION ([\d.]+)\)", (REPO_ROOT / "CMakeLists.txt").read_text())[1]
    python = tomllib.loads((REPO_ROOT / "grader/pyproject.toml").read_text())["project"]["requires-python"]
    cxx = re.search(r"CXX_STANDARD (\d+)", (REPO_ROOT / "cmake/CudalabLab.cmake").read_text())[1]
    presets = (REPO_ROOT / "CMakePresets.json").read_text()
    oldest = min(int(a) for a in re.findall(r"\b(\d+)-real", presets))
    assert cmake == ".".join(map(str, doctor.CMAKE_MINIMUM))
    return {"CUDA": str(doctor.CUDA_MAJOR), "CMake": cmake, "Python": python.removeprefix(">="), "C++": cxx,
            "sm": str(oldest)}


@pytest.mark.parametrize("where", ["README.md", "the bundle's README.md"])
def test_the_requirements_are_the_versions_the_build_and_grader_require(where):
    text = " ".join((prose("README.md").split("## Requirements", 1)[1] if where == "README.md"
                     else bundle_readme().split("Requirements:", 1)[1]).split())
    wanted = required_versions()
    said = {"CUDA": re.search(r"CUDA (\d+)", text)[1], "CMake": re.search(r"CMake ([\d.]+)\+", text)[1],
            "Python": re.search(r"Python ([\d.]+)\+", text)[1], "C++": re.search(r"C\+\+(\d+) compiler", text)[1]}
    if where == "README.md":
        said["sm"] = re.search(r"sm_(\d+) or newer", text)[1]
    assert said == {key: wanted[key] for key in said}
    assert f"Python {wanted['Python']} or newer" in prose("grader/README.md")
