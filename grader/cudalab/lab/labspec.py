"""Read and validate a lab's lab.toml, and emit the C++ header the harness compiles.

lab.toml is the one source of truth for a lab: its cases, tolerances, bench sizes,
byte model, ladder and scoring. The C++ side never parses TOML; CMake runs
``python3 -m cudalab.lab.labspec emit-header lab.toml lab_spec.hpp`` at configure time, so the
harness, the checker and the grader can never disagree about a case.

This module uses the standard library only: CMake runs it before anything is installed.
"""
from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from . import images
from .catalogue import BASE_LIBRARIES, BASE_TITLES, LIBRARIES

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - older Pythons
    import tomli as tomllib  # type: ignore[no-redef]

SCHEMA_KEYS_CASE = {"name", "why"}
# The case parameters that are text, not integers: each names a dataset image, the case's
# picture (image = "camera", at its own size) or the photograph its picture is tiled with
# (tiles = "chelsea", at any size).
TEXT_PARAMS = ("image", "tiles")
DTYPES = ("f32", "f64", "i32", "u32", "i64", "u64", "u8")


class LabSpecError(ValueError):
    """lab.toml is malformed; the message says where and what to change."""


@dataclass(frozen=True)
class Case:
    name: str
    params: dict[str, int]
    why: str = ""
    # Text parameters: the real image a case is made from (image = "camera") or tiled with
    # (tiles = "chelsea"), named in datasets/images.toml and embedded in the lab's binaries
    # at build time.
    texts: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Output:
    name: str
    dtype: str
    abs: float
    rel: float
    ulp: int  # -1: the ULP criterion is off
    computed: bool  # the lab's reference derives the bound per case
    why: str
    order_note: str = ""  # for a float result whose rounding depends on the order: what to avoid, and why

    @property
    def exact(self) -> bool:
        """Judged bit for bit (labkit's exact_output: no tolerance, none computed per case)."""
        return not self.computed and self.abs == 0.0 and self.rel == 0.0 and self.ulp <= 0


@dataclass(frozen=True)
class Rung:
    name: str
    source: str
    skip_bench_cases: tuple[str, ...] = ()  # bench cases the ladder does not run this rung on
    skip_why: str = ""                      # the sentence the table shows for them


@dataclass(frozen=True)
class Scoring:
    correctness_points: float
    performance_points: float
    timing_case: str
    full_marks_ratio: float
    zero_marks_ratio: float
    reference: str = ""  # the [[ladder]] source students are timed against; "" is the solution
    # Wall-clock limit for one run of every case (a grade's correctness run, `cudalab run`,
    # the hand-in check's smoke run): a hung or hopelessly slow program is stopped here
    # instead of holding the GPU for the grader's general process limit.
    time_limit_s: float = 30.0
    # Timed samples per submission session that the auditor keeps for the trusted checker;
    # 0: the grader's default (Config.kept_samples). A lab whose timed output the auditor's
    # own verification cannot judge closely (one float: reduction's sum) keeps more.
    kept_samples: int = 0
    # Timing rounds of a grade; 0: the grader's default (Config.timing_rounds). A lab whose
    # timed call is tens of microseconds (reduction's) is scored on the median of more rounds,
    # since a microsecond is a per cent of it.
    timing_rounds: int = 0
    # Seconds of the reference's timed samples that set how many samples a timing round
    # takes; 0: the grader's default (Config.timing_target_s). A lab whose every sample costs
    # the auditor several times its timed window to stage and verify (Sobel's 256 MB image)
    # asks for fewer, to keep a grade within its time.
    timing_target_s: float = 0.0
    # The quantile of each program's samples that a timing round scores; 0: the grader's
    # (timing.SCORED_QUANTILE, the 5th percentile). A shortcut taken in a fraction f of the
    # calls moves the score once f passes it, so a lab whose timed output the auditor cannot
    # judge closely on every sample (matmul's float product, whose lower precision pays)
    # scores a higher one, where the checker's kept samples then catch it.
    timing_quantile: float = 0.0
    # Fewest timed samples in a round; 0: the grader's (Config.samples_min, 20). What a round
    # of a call longer than timing_target_s / samples_min gets. A lab whose median of that
    # many samples is not steady enough between grades (matmul's) asks for more.
    timing_samples_min: int = 0

    def kept(self, default: int) -> int:
        return self.kept_samples or default

    def rounds(self, default: int) -> int:
        return self.timing_rounds or default

    def target_s(self, default: float) -> float:
        return self.timing_target_s or default

    def quantile(self, default: float) -> float:
        return self.timing_quantile or default

    def samples_min(self, default: int) -> int:
        return self.timing_samples_min or default

    def kept_in_round(self, number: int, rounds: int, default: int, exact: bool) -> int:
        """The timed samples kept for the checker in round `number` of `rounds`. None in the
        last round (of several): the checks of a round run while the next rounds are timed,
        so none is left to wait for, and a submission, scored on the median of the rounds,
        must be fast in two of them to gain, so in one that is checked. Where every output
        is exact (`exact`) the auditor has already compared each sample bit for bit with the
        reference's: one sample of the first round goes to the checker, the judge of every
        verdict, and the others would only repeat it."""
        if rounds > 1 and number == rounds:
            return 0
        if exact:
            return 1 if number == 1 else 0
        return self.kept(default)


@dataclass(frozen=True)
class Forbidden:
    library: str  # a key of catalogue.LIBRARIES
    why: str      # what the student reads: why this lab does not allow it


@dataclass(frozen=True)
class HandInRules:
    accepts_readme: bool = False          # README.md with written answers is taken
    forbidden: tuple[Forbidden, ...] = ()  # libraries the handout names, each with why the lab refuses it
    # What a submission may use (lab.toml [handin] libraries): its compile sees no other
    # library's headers and its runs load no other CUDA library (libraries.py).
    libraries: tuple[str, ...] = BASE_LIBRARIES
    smoke_cases: tuple[str, ...] = ()     # the small cases `cudalab check` runs
    sanitizer_cases: tuple[str, ...] = ()  # the cases compute-sanitizer runs
    sanitizer_points: float = 0.0         # points a grade takes off for sanitizer errors (0: report only)

    @property
    def refused(self) -> tuple[Forbidden, ...]:
        """Every catalogued library the lab does not allow, for the source and object checks:
        those [[handin.forbidden]] names, with their reasons, then the others, with a reason
        that says what the lab allows."""
        titles = [BASE_TITLES.get(k) or LIBRARIES[k].title for k in self.libraries]
        allowed = ", ".join(titles[:-1]) + (" and " if len(titles) > 1 else "") + titles[-1]
        named = {rule.library for rule in self.forbidden}
        others = tuple(Forbidden(key, f"this lab allows only {allowed}. Write this part yourself.")
                       for key in LIBRARIES if key not in named and key not in self.libraries)
        return self.forbidden + others


@dataclass(frozen=True)
class Question:
    """A written question ([[questions]]): the student answers it in README.md, and the
    instructor gives its points by hand (a column of the gradebook that a new run keeps)."""
    id: str
    text: str
    points: float


@dataclass(frozen=True)
class LabSpec:
    path: Path
    name: str
    title: str
    summary: str
    files: tuple[str, ...]
    api_header: str
    max_file_bytes: int
    api: tuple[dict, ...]
    outputs: tuple[Output, ...]
    cases: tuple[Case, ...]
    bench_cases: tuple[Case, ...]
    byte_model: str
    flop_model: str
    baseline: str
    ladder: tuple[Rung, ...]
    scoring: Scoring
    handin: HandInRules = HandInRules()
    # The cases whose trusted reference asks the GPU ([checker] gpu): the checker sees the GPU
    # only when it judges one of them, so that checking anything else never holds a GPU.
    checker_gpu_cases: tuple[str, ...] = ()
    takes_block: bool = False  # the API takes a block shape; `--block WxH` chooses it ([lab] takes_block)
    items_model: str = "0"     # how many items (pixels, keys) a bench case processes ([bench] items_model)
    items_name: str = ""       # what they are called, for "G<items>/s" ([bench] items_name)
    questions: tuple[Question, ...] = ()  # written questions, answered in README.md ([[questions]])
    raw: dict = field(repr=False, compare=False, default_factory=dict)

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def every_output_exact(self) -> bool:
        return all(output.exact for output in self.outputs)

    @property
    def accepts_readme(self) -> bool:
        return self.handin.accepts_readme

    @property
    def source_file(self) -> str:
        """The .cu file the student writes."""
        return next(name for name in self.files if name.endswith(".cu"))

    def case(self, name: str) -> Case:
        for c in self.cases + self.bench_cases:
            if c.name == name:
                return c
        raise KeyError(name)

    def bytes_moved(self, case: Case) -> float:
        return evaluate_model(self.byte_model, case.params)

    def flops(self, case: Case) -> float:
        return evaluate_model(self.flop_model, case.params)

    def items(self, case: Case) -> float:
        return evaluate_model(self.items_model, case.params)

    @property
    def dataset_images(self) -> tuple[str, ...]:
        """The real images the cases name (image or tiles), in order of first use."""
        names: list[str] = []
        for c in self.cases + self.bench_cases:
            for key in TEXT_PARAMS:
                image = c.texts.get(key)
                if image and image not in names:
                    names.append(image)
        return tuple(names)


# --- model expressions -------------------------------------------------------------
# A byte or FLOP model is arithmetic over a case's parameters, written so that it is
# valid both in Python and in C++: names, numbers, + - * / and parentheses.

_ALLOWED_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Add, ast.Sub, ast.Mult,
                  ast.Div, ast.USub, ast.UAdd, ast.Constant, ast.Name, ast.Load)


def check_model(expr: str, param_names: set[str], where: str) -> None:
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as err:
        raise LabSpecError(f"{where}: '{expr}' is not an arithmetic expression ({err.msg})") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise LabSpecError(
                f"{where}: '{expr}' may only use case parameters, numbers, + - * / and "
                f"parentheses (found {type(node).__name__})")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise LabSpecError(f"{where}: '{expr}' has a non-numeric constant {node.value!r}")
        if isinstance(node, ast.Name) and node.id not in param_names:
            known = ", ".join(sorted(param_names)) or "none"
            raise LabSpecError(f"{where}: '{expr}' uses '{node.id}', which is not a parameter "
                               f"of every case (parameters: {known})")


def model_names(expr: str) -> list[str]:
    tree = ast.parse(expr, mode="eval")
    return sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)})


def evaluate_model(expr: str, params: dict[str, int]) -> float:
    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.Name):
            return float(params[node.id])
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            return a / b
        raise LabSpecError(f"unsupported expression node {type(node).__name__}")

    return ev(ast.parse(expr, mode="eval"))


# --- loading -----------------------------------------------------------------------

def _require(table: dict, key: str, kind: type | tuple, where: str):
    if key not in table:
        raise LabSpecError(f"{where}: missing key '{key}'")
    value = table[key]
    if isinstance(value, bool) and kind is not bool and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise LabSpecError(f"{where}: '{key}' must be {_kind_name(kind)}, not a boolean")
    if not isinstance(value, kind):
        raise LabSpecError(f"{where}: '{key}' must be {_kind_name(kind)}, got {value!r}")
    return value


def _kind_name(kind) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
             list: "a list", dict: "a table"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _case(table: dict, where: str) -> Case:
    name = _require(table, "name", str, where)
    if not name or not all(ch.isalnum() or ch in "_-" for ch in name):
        raise LabSpecError(f"{where}: case name '{name}' may use letters, digits, '_' and '-' only "
                           "(it names files)")
    params: dict[str, int] = {}
    texts: dict[str, str] = {}
    for key, value in table.items():
        if key in SCHEMA_KEYS_CASE:
            continue
        if key in TEXT_PARAMS:
            if not isinstance(value, str) or not value or not all(ch.isalnum() or ch == "_" for ch in value):
                raise LabSpecError(f"{where} ('{name}'): '{key}' must name a dataset image (letters, digits, '_'), "
                                   f"got {value!r}")
            texts[key] = value
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise LabSpecError(f"{where} ('{name}'): parameter '{key}' must be an integer, got {value!r}")
        if not key.isidentifier():
            raise LabSpecError(f"{where} ('{name}'): parameter name '{key}' is not an identifier")
        params[key] = value
    why = table.get("why", "")
    if not isinstance(why, str):
        raise LabSpecError(f"{where} ('{name}'): 'why' must be a string")
    return Case(name=name, params=params, why=why, texts=texts)


def _cases(tables, where: str) -> tuple[Case, ...]:
    if not isinstance(tables, list) or not tables:
        raise LabSpecError(f"{where}: needs at least one case ([[{where}]] tables)")
    cases = tuple(_case(t, f"{where}[{i}]") for i, t in enumerate(tables))
    seen: set[str] = set()
    for c in cases:
        if c.name in seen:
            raise LabSpecError(f"{where}: case name '{c.name}' appears twice")
        seen.add(c.name)
    return cases


def _output(table: dict, where: str) -> Output:
    name = _require(table, "name", str, where)
    dtype = _require(table, "dtype", str, where)
    if dtype not in DTYPES:
        raise LabSpecError(f"{where}: dtype '{dtype}' is not one of {', '.join(DTYPES)}")
    abs_tol = float(_require(table, "abs", (int, float), where))
    rel_tol = float(_require(table, "rel", (int, float), where))
    ulp = table.get("ulp", -1)
    if isinstance(ulp, bool) or not isinstance(ulp, int) or ulp < -1:
        raise LabSpecError(f"{where}: 'ulp' must be a whole number of ULPs (0 or more)")
    if abs_tol < 0 or rel_tol < 0:
        raise LabSpecError(f"{where}: tolerances must not be negative")
    computed = table.get("computed", False)
    if not isinstance(computed, bool):
        raise LabSpecError(f"{where}: 'computed' must be true or false")
    why = _require(table, "why", str, where)
    order_note = table.get("order_note", "")
    if not isinstance(order_note, str):
        raise LabSpecError(f"{where}: 'order_note' must be text")
    return Output(name, dtype, abs_tol, rel_tol, ulp, computed, why, order_note)


def load(path: str | Path) -> LabSpec:
    """Load and validate one lab.toml; raise LabSpecError with a sentence on any problem."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LabSpecError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as err:
        raise LabSpecError(f"{path}: not valid TOML ({err})") from None

    where = str(path)
    lab = _require(raw, "lab", dict, where)
    name = _require(lab, "name", str, f"{where} [lab]")
    if name != path.parent.name:
        raise LabSpecError(f"{where} [lab]: name '{name}' must match its folder '{path.parent.name}'")
    files = _require(lab, "files", list, f"{where} [lab]")
    if not files or not all(isinstance(f, str) and f and "/" not in f and f not in (".", "..")
                            for f in files):
        raise LabSpecError(f"{where} [lab]: 'files' must list plain file names")
    if len(set(files)) != len(files):
        raise LabSpecError(f"{where} [lab]: 'files' names a file twice")
    max_file_bytes = lab.get("max_file_bytes", 65536)
    if isinstance(max_file_bytes, bool) or not isinstance(max_file_bytes, int) or max_file_bytes <= 0:
        raise LabSpecError(f"{where} [lab]: 'max_file_bytes' must be a positive whole number of bytes")

    outputs = tuple(_output(t, f"{where} [[outputs]][{i}]")
                    for i, t in enumerate(_require(raw, "outputs", list, where)))
    cases = _cases(raw.get("cases"), f"{where} [[cases]]")
    bench = _require(raw, "bench", dict, where)
    bench_cases = _cases(bench.get("cases"), f"{where} [[bench.cases]]")
    clash = {c.name for c in cases} & {c.name for c in bench_cases}
    if clash:
        raise LabSpecError(f"{where}: names used both as a case and a bench case: {', '.join(sorted(clash))}")

    # The models are evaluated for bench cases only (what a timed run moves and computes).
    common = set.intersection(*(set(c.params) for c in (bench_cases or cases)))
    byte_model = _require(bench, "byte_model", str, f"{where} [bench]")
    check_model(byte_model, common, f"{where} [bench] byte_model")
    flop_model = bench.get("flop_model", "0")
    check_model(flop_model, common, f"{where} [bench] flop_model")
    items_model = bench.get("items_model", "0")
    check_model(items_model, common, f"{where} [bench] items_model")
    items_name = bench.get("items_name", "")
    if not isinstance(items_name, str) or (items_model != "0") != bool(items_name):
        raise LabSpecError(f"{where} [bench]: items_model and items_name come together (e.g. items_model = "
                           "\"width * height\", items_name = \"pixels\")")
    takes_block = lab.get("takes_block", False)
    if not isinstance(takes_block, bool):
        raise LabSpecError(f"{where} [lab]: 'takes_block' must be true or false")

    ladder = tuple(_rung(t, {c.name for c in bench_cases}, f"{where} [[ladder]][{i}]")
                   for i, t in enumerate(raw.get("ladder", [])))
    stems: set[str] = set()
    for i, rung in enumerate(ladder):
        source = PurePosixPath(rung.source)
        if source.is_absolute() or ".." in source.parts or source.suffix != ".cu":
            raise LabSpecError(f"{where} [[ladder]][{i}]: source '{rung.source}' must be a .cu file "
                               f"inside solutions/{name}/ (a relative path without '..')")
        if source.stem in stems:
            raise LabSpecError(f"{where} [[ladder]][{i}]: two ladder sources are called "
                               f"'{source.stem}'; each rung needs its own file name (it names the binary)")
        stems.add(source.stem)

    sc = _require(raw, "scoring", dict, where)
    in_scoring = f"{where} [scoring]"
    scoring = Scoring(
        correctness_points=float(_require(sc, "correctness_points", (int, float), in_scoring)),
        performance_points=float(_require(sc, "performance_points", (int, float), in_scoring)),
        timing_case=_require(sc, "timing_case", str, in_scoring),
        full_marks_ratio=float(_require(sc, "full_marks_ratio", (int, float), in_scoring)),
        zero_marks_ratio=float(_require(sc, "zero_marks_ratio", (int, float), in_scoring)),
        reference=sc.get("reference", ""),
        time_limit_s=_time_limit(sc.get("time_limit_s", Scoring.time_limit_s), in_scoring),
        kept_samples=sc.get("kept_samples", 0),
        timing_rounds=sc.get("timing_rounds", 0),
        timing_target_s=sc.get("timing_target_s", 0.0),
        timing_quantile=sc.get("timing_quantile", 0.0),
        timing_samples_min=sc.get("timing_samples_min", 0),
    )
    # The grader's defaults a lab may override (0, or left out: the default), each checked alike.
    for key, whole, low, high, kind, meaning in (
            ("timing_rounds", True, 1, 9, "a whole number", "timing rounds of a grade, scored on their median"),
            ("timing_target_s", False, 0.01, 5, "a number of seconds",
             "the reference's timed samples that set a timing round's length"),
            ("timing_quantile", False, 0.01, 0.5, "a number",
             "the quantile of each program's samples a timing round scores"),
            ("timing_samples_min", True, 5, 200, "a whole number", "the fewest timed samples of a timing round"),
            ("kept_samples", True, 1, 16, "a whole number", "timed samples per session the checker judges")):
        value = getattr(scoring, key)
        if (isinstance(value, bool) or not isinstance(value, int if whole else (int, float))
                or not (value == 0 or low <= value <= high)):
            raise LabSpecError(f"{in_scoring}: '{key}' must be {kind} from {low:g} to {high:g} ({meaning}), or left "
                               "out for the grader's default")
    if not isinstance(scoring.reference, str):
        raise LabSpecError(f"{in_scoring}: 'reference' must be the source of a [[ladder]] rung, e.g. \"ladder/tiled.cu\"")
    if scoring.reference and scoring.reference not in {r.source for r in ladder}:
        sources = ", ".join(r.source for r in ladder) or "none"
        raise LabSpecError(f"{in_scoring}: reference '{scoring.reference}' is not the source of a "
                           f"[[ladder]] rung (rungs: {sources})")
    if scoring.correctness_points < 0 or scoring.performance_points < 0:
        raise LabSpecError(f"{in_scoring}: points must not be negative")
    if scoring.timing_case not in {c.name for c in bench_cases}:
        names = ", ".join(c.name for c in bench_cases)
        raise LabSpecError(f"{where} [scoring]: timing_case '{scoring.timing_case}' is not a bench "
                           f"case (bench cases: {names})")
    if not 0 < scoring.full_marks_ratio < scoring.zero_marks_ratio:
        raise LabSpecError(f"{where} [scoring]: need 0 < full_marks_ratio < zero_marks_ratio")

    handin = _handin(raw.get("handin", {}), cases, scoring, where)
    questions = _questions(raw.get("questions", []), handin, where)
    checker_gpu_cases = _checker_gpu_cases(raw.get("checker", {}), cases, bench_cases, where)

    return LabSpec(
        path=path, name=name, title=_require(lab, "title", str, f"{where} [lab]"),
        summary=lab.get("summary", ""), files=tuple(files),
        api_header=_require(lab, "api_header", str, f"{where} [lab]"),
        max_file_bytes=max_file_bytes,
        api=tuple(raw.get("api", [])), outputs=outputs, cases=cases,
        bench_cases=bench_cases, byte_model=byte_model, flop_model=flop_model,
        baseline=bench.get("baseline", ""), ladder=ladder, scoring=scoring, handin=handin,
        checker_gpu_cases=checker_gpu_cases, takes_block=takes_block, items_model=items_model,
        items_name=items_name, questions=questions, raw=raw)


def _time_limit(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 3600:
        raise LabSpecError(f"{where}: 'time_limit_s' must be a number of seconds, more than 0 and at most "
                           "3600 (how long one run of every case may take)")
    return float(value)


def _checker_gpu_cases(checker, cases, bench_cases, where: str) -> tuple[str, ...]:
    """[checker] gpu: true (every case's reference asks the GPU), false, or the names of the
    cases whose reference does (as the occupancy lab's live case asks the occupancy API)."""
    problem = (f"{where} [checker]: the only key is 'gpu': true, false, or a list of the case names whose "
               "reference asks the GPU (as the occupancy API does)")
    if not isinstance(checker, dict) or set(checker) - {"gpu"}:
        raise LabSpecError(problem)
    gpu = checker.get("gpu", False)
    names = [c.name for c in (*cases, *bench_cases)]
    if isinstance(gpu, bool):
        return tuple(names) if gpu else ()
    if not isinstance(gpu, list) or not all(isinstance(name, str) for name in gpu):
        raise LabSpecError(problem)
    unknown = [name for name in gpu if name not in names]
    if unknown:
        raise LabSpecError(f"{where} [checker] gpu names no case {', '.join(map(repr, unknown))} "
                           f"(the cases: {', '.join(names)})")
    return tuple(gpu)


def _rung(table, bench_names: set[str], where: str) -> Rung:
    if not isinstance(table, dict):
        raise LabSpecError(f"{where}: must be a table with 'name' and 'source'")
    unknown = set(table) - {"name", "source", "skip_bench_cases", "skip_why"}
    if unknown:
        raise LabSpecError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(sorted(unknown))}")
    skip = table.get("skip_bench_cases", [])
    if not isinstance(skip, list) or not all(isinstance(v, str) for v in skip):
        raise LabSpecError(f"{where}: 'skip_bench_cases' must be a list of bench case names")
    strangers = [v for v in skip if v not in bench_names]
    if strangers:
        raise LabSpecError(f"{where}: 'skip_bench_cases' names {', '.join(strangers)}, not a bench case "
                           f"(bench cases: {', '.join(sorted(bench_names))})")
    why = table.get("skip_why", "")
    if not isinstance(why, str) or bool(skip) != bool(why.strip()):
        raise LabSpecError(f"{where}: 'skip_bench_cases' and 'skip_why' go together: say in skip_why "
                           "why the rung does not run on those bench cases")
    return Rung(_require(table, "name", str, where), _require(table, "source", str, where),
                tuple(skip), why.strip())


def _smallest_cases(cases: tuple[Case, ...], count: int) -> tuple[str, ...]:
    def size(case: Case) -> int:
        product = 1
        for value in case.params.values():
            product *= max(1, value)
        return product
    return tuple(c.name for c in sorted(cases, key=size)[:count])


def _allowed_libraries(value, where: str, catalogue) -> tuple[str, ...]:
    """[handin] libraries: keys of the catalogue (catalogue.LIBRARIES) besides the two every
    lab has, which must be listed too, so that the list reads as all a submission may use."""
    known = [*BASE_LIBRARIES, *catalogue]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise LabSpecError(f"{where}: 'libraries' must be a list of library names (known: {', '.join(known)})")
    unknown = [v for v in value if v not in known]
    if unknown:
        raise LabSpecError(f"{where}: 'libraries' names {', '.join(unknown)}, which cudalab does not know "
                           f"(known: {', '.join(known)})")
    missing = [v for v in BASE_LIBRARIES if v not in value]
    if missing:
        raise LabSpecError(f"{where}: 'libraries' must include {' and '.join(missing)}: every lab's code "
                           "is compiled against them")
    return tuple(dict.fromkeys(value))


def _questions(tables, handin: HandInRules, where: str) -> tuple[Question, ...]:
    """[[questions]]: each with a plain `id`, its `text` and its `points` (0 or more), answered
    in README.md, so the lab must take one ([handin] readme = true)."""
    if not isinstance(tables, list):
        raise LabSpecError(f"{where} [[questions]]: must be an array of tables")
    questions = []
    for i, table in enumerate(tables):
        at = f"{where} questions[{i}]"
        if not isinstance(table, dict):
            raise LabSpecError(f"{at}: must be a table with 'id', 'text' and 'points'")
        unknown = set(table) - {"id", "text", "points"}
        if unknown:
            raise LabSpecError(f"{at}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(sorted(unknown))}")
        ident = _require(table, "id", str, at)
        if not re.fullmatch(r"[a-z][a-z0-9_]{0,31}", ident):
            raise LabSpecError(f"{at}: id '{ident}' must be a short lowercase name (letters, digits, '_')")
        if ident in {q.id for q in questions}:
            raise LabSpecError(f"{at}: id '{ident}' is used twice")
        points = table.get("points")
        if isinstance(points, bool) or not isinstance(points, (int, float)) or points < 0:
            raise LabSpecError(f"{at}: 'points' must be a number of points, 0 or more")
        questions.append(Question(ident, _require(table, "text", str, at).strip(), float(points)))
    if questions and not handin.accepts_readme:
        raise LabSpecError(f"{where}: [[questions]] are answered in README.md, so [handin] needs readme = true")
    return tuple(questions)


def _handin(table, cases: tuple[Case, ...], scoring: Scoring, where: str) -> HandInRules:
    """The [handin] table: what `cudalab check` and `cudalab pack` hold a hand-in to."""
    where = f"{where} [handin]"
    if not isinstance(table, dict):
        raise LabSpecError(f"{where}: must be a table")
    unknown = set(table) - {"readme", "forbidden", "libraries", "smoke_cases", "sanitizer_cases", "sanitizer_points"}
    if unknown:
        raise LabSpecError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(sorted(unknown))}")
    readme = table.get("readme", False)
    if not isinstance(readme, bool):
        raise LabSpecError(f"{where}: 'readme' must be true or false")
    names = {c.name for c in cases}

    def case_list(key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        value = table.get(key)
        if value is None:
            return default
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise LabSpecError(f"{where}: '{key}' must be a non-empty list of case names")
        unknown_cases = [v for v in value if v not in names]
        if unknown_cases:
            raise LabSpecError(f"{where}: '{key}' names {', '.join(unknown_cases)}, which "
                               f"{'is not a case' if len(unknown_cases) == 1 else 'are not cases'} of [[cases]]")
        return tuple(value)

    rules = []
    for i, item in enumerate(table.get("forbidden", [])):
        at = f"{where} forbidden[{i}]"
        if not isinstance(item, dict):
            raise LabSpecError(f"{at}: must be a table with 'library' and 'why'")
        library = _require(item, "library", str, at)
        if library not in LIBRARIES:
            raise LabSpecError(f"{at}: unknown library '{library}' (known: {', '.join(sorted(LIBRARIES))})")
        rules.append(Forbidden(library, _require(item, "why", str, at)))
    allowed = _allowed_libraries(table.get("libraries", list(BASE_LIBRARIES)), where, LIBRARIES)
    both = [rule.library for rule in rules if rule.library in allowed]
    if both:
        raise LabSpecError(f"{where}: {', '.join(both)} is both in 'libraries' (allowed) and in "
                           "[[handin.forbidden]]; keep it in one of them")
    points = table.get("sanitizer_points", 0)
    if isinstance(points, bool) or not isinstance(points, (int, float)) or points < 0:
        raise LabSpecError(f"{where}: 'sanitizer_points' must be a number of points, 0 or more")
    if points > scoring.correctness_points + scoring.performance_points:
        raise LabSpecError(f"{where}: 'sanitizer_points' is more than the lab's total points")
    smoke = case_list("smoke_cases", _smallest_cases(cases, 3))
    return HandInRules(accepts_readme=readme, forbidden=tuple(rules), libraries=allowed, smoke_cases=smoke,
                       sanitizer_cases=case_list("sanitizer_cases", smoke[:2]),
                       sanitizer_points=float(points))


# --- the C++ header ----------------------------------------------------------------

def _cpp_string(text: str) -> str:
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{out}"'


def _cpp_cases(cases: tuple[Case, ...]) -> str:
    rows = []
    for c in cases:
        params = ", ".join(f"{{{_cpp_string(k)}, {v}LL}}" for k, v in c.params.items())
        texts = ", ".join(f"{{{_cpp_string(k)}, {_cpp_string(v)}}}" for k, v in c.texts.items())
        rows.append(f"    {{{_cpp_string(c.name)}, {{{params}}}, {{{texts}}}}},")
    return "\n".join(rows)


def _cpp_model(function: str, expr: str) -> str:
    lines = [f"inline double {function}(const labkit::CaseSpec& c) {{"]
    for name in model_names(expr):
        lines.append(f"    const double {name} = static_cast<double>(c.param({_cpp_string(name)}));")
    if not model_names(expr):
        lines.append("    (void)c;")
    lines.append(f"    return static_cast<double>({expr});")
    lines.append("}")
    return "\n".join(lines)


def emit_header(spec: LabSpec) -> str:
    outputs = "\n".join(
        f"    {{{_cpp_string(o.name)}, labkit::DType::{o.dtype}, "
        f"labkit::Tolerance{{{o.abs!r}, {o.rel!r}, {o.ulp}}}, {'true' if o.computed else 'false'}}},"
        for o in spec.outputs)
    return f"""// Generated from labs/{spec.name}/lab.toml by cudalab.lab.labspec. Do not edit: edit lab.toml.
#pragma once

#include "labkit/lab_spec_types.hpp"

namespace lab_spec {{

inline constexpr const char* kLabName = {_cpp_string(spec.name)};
inline constexpr const char* kLabTitle = {_cpp_string(spec.title)};
inline constexpr bool kTakesBlock = {'true' if spec.takes_block else 'false'};
inline constexpr const char* kItemsName = {_cpp_string(spec.items_name)};

inline const std::vector<labkit::CaseSpec> kCases = {{
{_cpp_cases(spec.cases)}
}};

inline const std::vector<labkit::CaseSpec> kBenchCases = {{
{_cpp_cases(spec.bench_cases)}
}};

inline const std::vector<labkit::OutputSpec> kOutputs = {{
{outputs}
}};

{_cpp_model("bytes_moved", spec.byte_model)}

{_cpp_model("flops", spec.flop_model)}

{_cpp_model("items", spec.items_model)}

}}  // namespace lab_spec
"""


# --- the embedded dataset images ---------------------------------------------------

def _dataset_image(path: Path) -> tuple[int, int, bytes]:
    """(width, height, pixels) of a dataset image, read as the grader reads every PGM."""
    try:
        return images.read_pgm(path)
    except images.ImageError as err:
        raise LabSpecError(f"{err} (datasets/make_images.py writes the dataset images)") from None


def emit_datasets(spec: LabSpec, datasets: Path) -> str:
    """C++ defining lab_datasets::kImages: every image the lab's cases name, embedded, after
    checking that each case's width and height are the image's (a case that tiles an image
    may have any size)."""
    pictures = {name: _dataset_image(datasets / "images" / f"{name}.pgm") for name in spec.dataset_images}
    for c in spec.cases + spec.bench_cases:
        name = c.texts.get("image")
        if not name:
            continue
        width, height, _ = pictures[name]
        if (c.params.get("width"), c.params.get("height")) != (width, height):
            raise LabSpecError(f"{spec.path} case '{c.name}': image '{name}' is {width}x{height}, so the case "
                               f"needs width = {width} and height = {height}")
    arrays, rows = [], []
    for index, (name, (width, height, pixels)) in enumerate(pictures.items()):
        lines = []
        for start in range(0, len(pixels), 64):
            lines.append('    "' + "".join(f"\\{b:03o}" for b in pixels[start:start + 64]) + '"')
        arrays.append(f"// datasets/images/{name}.pgm ({width} x {height})\n"
                      f"const char kImage{index}[] =\n" + "\n".join(lines) + ";")
        rows.append(f"    {{{_cpp_string(name)}, {width}, {height}, "
                    f"reinterpret_cast<const unsigned char*>(kImage{index})}},")
    return f"""// Generated from labs/{spec.name}/lab.toml and datasets/images by cudalab.lab.labspec. Do not edit.
#include "labkit/datasets.hpp"

namespace lab_datasets {{

namespace {{

{chr(10).join(arrays)}

}}  // namespace

const std::vector<labkit::DatasetImage> kImages = {{
{chr(10).join(rows)}
}};

}}  // namespace lab_datasets
"""


def _write_if_changed(out: Path, text: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists() or out.read_text(encoding="utf-8") != text:
        out.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """`emit-header LAB_TOML OUT_HPP` writes the generated header; `emit-datasets LAB_TOML
    OUT_CPP DATASETS_DIR` the C++ that embeds the images the cases name (and prints their
    files, for CMake to watch); `api-header LAB_TOML` prints the name of the lab's student
    API header (CMake copies it into the lab's SDK)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not ((len(argv) == 3 and argv[0] == "emit-header") or (len(argv) == 2 and argv[0] == "api-header")
            or (len(argv) == 4 and argv[0] == "emit-datasets")):
        print("usage: python3 -m cudalab.lab.labspec emit-header LAB_TOML OUT_HPP\n"
              "       python3 -m cudalab.lab.labspec emit-datasets LAB_TOML OUT_CPP DATASETS_DIR\n"
              "       python3 -m cudalab.lab.labspec api-header LAB_TOML", file=sys.stderr)
        return 2
    try:
        spec = load(argv[1])
        if argv[0] == "api-header":
            print(spec.api_header)
        elif argv[0] == "emit-datasets":
            datasets = Path(argv[3])
            _write_if_changed(Path(argv[2]), emit_datasets(spec, datasets))
            print(";".join(str(datasets / "images" / f"{name}.pgm") for name in spec.dataset_images))
        else:
            _write_if_changed(Path(argv[2]), emit_header(spec))
    except LabSpecError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
