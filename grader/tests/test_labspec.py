"""labspec: every validation error is one clear sentence; models evaluate; the header is stable."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from cudalab.lab import labspec
from conftest import REPO_ROOT, TOY_LAB_TOML

GOLDEN = Path(__file__).parent / "golden"


def load_text(tmp_path: Path, text: str) -> labspec.LabSpec:
    path = tmp_path / "labs" / "toy" / "lab.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return labspec.load(path)


def test_toy_lab_loads(tmp_path):
    spec = load_text(tmp_path, TOY_LAB_TOML)
    assert [c.name for c in spec.cases] == ["c_1", "c_7", "c_300"]
    assert spec.case("b_1000").params == {"n": 1000}
    assert spec.bytes_moved(spec.case("b_1000")) == 12000
    assert spec.scoring.timing_case == "b_1000"


def test_the_real_labs_load():
    for path in sorted((REPO_ROOT / "labs").glob("*/lab.toml")):
        labspec.load(path)


@pytest.mark.parametrize("old, new, expected", [
    ('title = "Toy lab"\n', "", "missing key 'title'"),
    ('dtype = "f32"', 'dtype = "float"', "dtype 'float' is not one of f32, f64"),
    ('name = "c_7"', 'name = "c 7"', "case name 'c 7' may use letters, digits"),
    ('name = "c_7"', 'name = "c_1"', "case name 'c_1' appears twice"),
    ('byte_model = "12 * n"', 'byte_model = "12 * m"', "uses 'm', which is not a parameter"),
    ('byte_model = "12 * n"', 'byte_model = "12 * (n"', "is not an arithmetic expression"),
    ('byte_model = "12 * n"', 'byte_model = "n ** 2"', "may only use case parameters"),
    ('byte_model = "12 * n"', 'byte_model = "len(n)"', "may only use case parameters"),
    ('timing_case = "b_1000"', 'timing_case = "c_1"', "timing_case 'c_1' is not a bench case (bench cases: b_1000)"),
    ('name = "b_1000"', 'name = "c_300"', "names used both as a case and a bench case: c_300"),
    ('full_marks_ratio = 1.10', 'full_marks_ratio = 4.0', "need 0 < full_marks_ratio < zero_marks_ratio"),
    ('n = 7', 'n = 7.5', "parameter 'n' must be an integer"),
    ('name = "toy"', 'name = "other"', "name 'other' must match its folder 'toy'"),
    ('files = ["toy.cu"]', 'files = ["src/toy.cu"]', "'files' must list plain file names"),
    ('files = ["toy.cu"]', 'files = ["toy.cu", "toy.cu"]', "names a file twice"),
    ('max_file_bytes = 1000', 'max_file_bytes = 0', "'max_file_bytes' must be a positive"),
    ('source = "ladder/simple.cu"', 'source = "../simple.cu"', "must be a .cu file inside solutions/toy/"),
    ('source = "ladder/simple.cu"', 'source = "ladder/toy.cu"', "two ladder sources are called 'toy'"),
    ('correctness_points = 60', 'correctness_points = true', "'correctness_points' must be an integer or a number, not a boolean"),
    ('correctness_points = 60\n', '', "[scoring]: missing key 'correctness_points'"),
    ('correctness_points = 60\n', 'correctness_points = 60\ntiming_rounds = 12\n', "'timing_rounds' must be a whole number from 1 to 9"),
    ('correctness_points = 60\n', 'correctness_points = 60\ntiming_rounds = 2.5\n', "'timing_rounds' must be a whole number from 1 to 9"),
    ('correctness_points = 60\n', 'correctness_points = 60\ntiming_target_s = 0.001\n', "'timing_target_s' must be a number of seconds from 0.01 to 5"),
    ('correctness_points = 60\n', 'correctness_points = 60\ntiming_quantile = 0.9\n', "'timing_quantile' must be a number from 0.01 to 0.5"),
    ('correctness_points = 60\n', 'correctness_points = 60\ntiming_samples_min = 2\n', "'timing_samples_min' must be a whole number from 5 to 200"),
    ('correctness_points = 60\n', 'correctness_points = 60\ntiming_target_s = "short"\n', "'timing_target_s' must be a number of seconds from 0.01 to 5"),
])
def test_validation_errors_are_sentences(tmp_path, old, new, expected):
    assert old in TOY_LAB_TOML
    with pytest.raises(labspec.LabSpecError) as err:
        load_text(tmp_path, TOY_LAB_TOML.replace(old, new, 1))
    assert expected in str(err.value)
    assert str(tmp_path) in str(err.value), "every message says which file"


def test_not_toml_and_no_file(tmp_path):
    with pytest.raises(labspec.LabSpecError, match="not valid TOML"):
        load_text(tmp_path, "[lab\n")
    with pytest.raises(labspec.LabSpecError, match="no such file"):
        labspec.load(tmp_path / "nope" / "lab.toml")


def test_no_cases(tmp_path):
    text = TOY_LAB_TOML.split("[[cases]]")[0] + "[bench]" + TOY_LAB_TOML.split("[bench]")[1]
    with pytest.raises(labspec.LabSpecError, match=r"\[\[cases\]\]: needs at least one case"):
        load_text(tmp_path, text)


@pytest.mark.parametrize("expr, params, value", [
    ("12 * n", {"n": 3}, 36.0),
    ("2 * m * n * k", {"m": 2, "n": 3, "k": 4}, 48.0),
    ("(n + 1) / 2 - -1", {"n": 5}, 4.0),
    ("4", {}, 4.0),
])
def test_model_evaluation(expr, params, value):
    labspec.check_model(expr, set(params), "test")
    assert labspec.evaluate_model(expr, params) == value


def test_header_matches_the_stored_copy(tmp_path):
    header = labspec.emit_header(load_text(tmp_path, TOY_LAB_TOML))
    golden = GOLDEN / "toy_lab_spec.hpp"
    if os.environ.get("CUDALAB_UPDATE_GOLDEN"):
        golden.write_text(header)
    assert header == golden.read_text(), "set CUDALAB_UPDATE_GOLDEN=1 to accept a deliberate change"


def test_emit_header_cli_writes_only_on_change(tmp_path):
    load_text(tmp_path, TOY_LAB_TOML)
    toml = tmp_path / "labs" / "toy" / "lab.toml"
    out = tmp_path / "gen" / "lab_spec.hpp"
    assert labspec.main(["emit-header", str(toml), str(out)]) == 0
    stamp = out.stat().st_mtime_ns
    assert labspec.main(["emit-header", str(toml), str(out)]) == 0
    assert out.stat().st_mtime_ns == stamp
    assert labspec.main(["emit-header", str(toml)]) == 2


HANDIN = """
[handin]
readme = true
smoke_cases = ["c_1", "c_7"]
sanitizer_points = 5

[[handin.forbidden]]
library = "cub"
why = "it does the lab's work"
"""


def test_handin_rules_load_with_their_defaults(tmp_path):
    default = load_text(tmp_path, TOY_LAB_TOML).handin
    assert (default.accepts_readme, default.forbidden, default.sanitizer_points) == (False, (), 0.0)
    assert default.smoke_cases == ("c_1", "c_7", "c_300") and default.sanitizer_cases == ("c_1", "c_7")
    rules = load_text(tmp_path, TOY_LAB_TOML + HANDIN).handin
    assert rules.accepts_readme and rules.smoke_cases == ("c_1", "c_7") and rules.sanitizer_points == 5
    assert [(f.library, f.why) for f in rules.forbidden] == [("cub", "it does the lab's work")]


@pytest.mark.parametrize("old,new,expected", [
    ('library = "cub"', 'library = "cuda_magic"', "unknown library 'cuda_magic' (known: cub, cublas, cudnn"),
    ('smoke_cases = ["c_1", "c_7"]', 'smoke_cases = ["c_1", "c_8"]', "'smoke_cases' names c_8, which is not a case"),
    ("readme = true", 'readme = "yes"', "'readme' must be true or false"),
    ("sanitizer_points = 5", "sanitizer_points = 500", "'sanitizer_points' is more than the lab's total points"),
    ("readme = true", "readme = true\nsmoke = 1", "unknown key smoke"),
])
def test_handin_validation_errors_are_sentences(tmp_path, old, new, expected):
    with pytest.raises(labspec.LabSpecError, match=None) as err:
        load_text(tmp_path, TOY_LAB_TOML + HANDIN.replace(old, new, 1))
    assert expected in str(err.value)


def test_a_lab_allows_the_runtime_and_the_standard_library_and_refuses_every_other_library(tmp_path):
    """Proves: [handin] libraries is an allowlist: by default the CUDA runtime and the C++
    standard library; every other catalogued library is refused, cuSPARSE (on no lab's
    forbidden list) included, those the lab names with its own reason first."""
    rules = load_text(tmp_path, TOY_LAB_TOML + HANDIN).handin
    assert rules.libraries == ("cuda_runtime", "cxx_standard")
    refused = {rule.library: rule.why for rule in rules.refused}
    assert rules.refused[0].library == "cub" and refused["cub"] == "it does the lab's work"
    assert {"cusparse", "cublas", "thrust", "occupancy_calculator", "libcudacxx"} <= set(refused)
    assert refused["cusparse"] == ("this lab allows only the CUDA runtime and the C++ standard library. "
                                   "Write this part yourself.")
    allowing = load_text(tmp_path, TOY_LAB_TOML + HANDIN.replace(
        "readme = true", 'readme = true\nlibraries = ["cuda_runtime", "cxx_standard", "libcudacxx"]')).handin
    assert allowing.libraries == ("cuda_runtime", "cxx_standard", "libcudacxx")
    assert "libcudacxx" not in {rule.library for rule in allowing.refused}


@pytest.mark.parametrize("libraries,expected", [
    ('["cuda_runtime", "cxx_standard", "cuda_magic"]', "'libraries' names cuda_magic, which cudalab does not know"),
    ('["cxx_standard"]', "'libraries' must include cuda_runtime: every lab's code is compiled against them"),
    ('"cub"', "'libraries' must be a list of library names"),
    ('["cuda_runtime", "cxx_standard", "cub"]', "cub is both in 'libraries' (allowed) and in [[handin.forbidden]]"),
])
def test_library_allowlist_errors_are_sentences(tmp_path, libraries, expected):
    with pytest.raises(labspec.LabSpecError) as err:
        load_text(tmp_path, TOY_LAB_TOML + HANDIN.replace("readme = true", f"readme = true\nlibraries = {libraries}"))
    assert expected in str(err.value)


def test_ladder_skips_scoring_reference_and_checker_gpu_load(tmp_path):
    text = TOY_LAB_TOML.replace('source = "ladder/simple.cu"\n', 'source = "ladder/simple.cu"\n'
                                'skip_bench_cases = ["b_1000"]\nskip_why = "one thread would take minutes"\n', 1)
    text = text.replace('zero_marks_ratio = 3.00\n', 'zero_marks_ratio = 3.00\nreference = "ladder/simple.cu"\n'
                        '\n[checker]\ngpu = true\n')
    spec = load_text(tmp_path, text)
    assert spec.ladder[0].skip_bench_cases == ("b_1000",)
    assert spec.ladder[0].skip_why == "one thread would take minutes"
    assert spec.ladder[1].skip_bench_cases == ()
    assert spec.scoring.reference == "ladder/simple.cu" and spec.checker_gpu_cases == ("c_1", "c_7", "c_300", "b_1000")
    from cudalab.lab import labs
    assert labs.scoring_reference(spec) == "ladder_simple"
    plain = load_text(tmp_path, TOY_LAB_TOML)
    assert labs.scoring_reference(plain) == "solution" and plain.checker_gpu_cases == ()
    only = load_text(tmp_path, TOY_LAB_TOML.replace('zero_marks_ratio = 3.00\n',
                                                    'zero_marks_ratio = 3.00\n\n[checker]\ngpu = ["c_7"]\n'))
    assert only.checker_gpu_cases == ("c_7",)


@pytest.mark.parametrize("old, new, expected", [
    ('source = "ladder/simple.cu"\n', 'source = "ladder/simple.cu"\nskip_bench_cases = ["b_2"]\nskip_why = "x"\n',
     "'skip_bench_cases' names b_2, not a bench case (bench cases: b_1000)"),
    ('source = "ladder/simple.cu"\n', 'source = "ladder/simple.cu"\nskip_bench_cases = ["b_1000"]\n',
     "'skip_bench_cases' and 'skip_why' go together"),
    ('source = "ladder/simple.cu"\n', 'source = "ladder/simple.cu"\nskip = ["b_1000"]\n', "unknown key skip"),
    ('zero_marks_ratio = 3.00\n', 'zero_marks_ratio = 3.00\nreference = "ladder/other.cu"\n',
     "reference 'ladder/other.cu' is not the source of a [[ladder]] rung (rungs: ladder/simple.cu, toy.cu)"),
    ('zero_marks_ratio = 3.00\n', 'zero_marks_ratio = 3.00\nreference = 3\n', "'reference' must be the source of"),
    ('zero_marks_ratio = 3.00\n', 'zero_marks_ratio = 3.00\n\n[checker]\ngpu = "yes"\n',
     "[checker]: the only key is 'gpu': true, false, or a list of the case names"),
    ('zero_marks_ratio = 3.00\n', 'zero_marks_ratio = 3.00\ntime_limit_s = "long"\n',
     "[scoring]: 'time_limit_s' must be a number of seconds, more than 0 and at most 3600"),
    ('zero_marks_ratio = 3.00\n', 'zero_marks_ratio = 3.00\ntime_limit_s = 0\n',
     "[scoring]: 'time_limit_s' must be a number of seconds"),
    ('zero_marks_ratio = 3.00\n', 'zero_marks_ratio = 3.00\n\n[checker]\ngpu = ["c_8"]\n',
     "[checker] gpu names no case 'c_8' (the cases: c_1, c_7, c_300, b_1000)"),
])
def test_ladder_scoring_and_checker_errors_are_sentences(tmp_path, old, new, expected):
    assert old in TOY_LAB_TOML
    with pytest.raises(labspec.LabSpecError) as err:
        load_text(tmp_path, TOY_LAB_TOML.replace(old, new, 1))
    assert expected in str(err.value)


def test_emit_datasets_embeds_the_named_images_and_refuses_a_wrong_size_or_missing_file(tmp_path):
    spec = labspec.load(REPO_ROOT / "labs" / "sobel" / "lab.toml")
    text = labspec.emit_datasets(spec, REPO_ROOT / "datasets")
    for name in spec.dataset_images:
        assert f'{{"{name}", ' in text
    assert spec.dataset_images[:1] == ("camera",) and text.count("const char kImage") == len(spec.dataset_images)
    wrong = load_text(tmp_path, (REPO_ROOT / "labs" / "sobel" / "lab.toml").read_text()
                      .replace('name = "sobel"', 'name = "toy"')
                      .replace("width = 512\nheight = 512", "width = 511\nheight = 512", 1))
    with pytest.raises(labspec.LabSpecError, match="image 'camera' is 512x512, so the case needs width = 512"):
        labspec.emit_datasets(wrong, REPO_ROOT / "datasets")
    with pytest.raises(labspec.LabSpecError, match="Cannot read the image .*camera.pgm.*make_images.py"):
        labspec.emit_datasets(spec, tmp_path / "no-datasets")


def test_a_case_that_tiles_a_photograph_embeds_it_at_any_size(tmp_path):
    # The sobel bench cases tile chelsea (451 x 300) over 16384 x 16384: no size check.
    spec = labspec.load(REPO_ROOT / "labs" / "sobel" / "lab.toml")
    bench = next(c for c in spec.bench_cases if c.name == "v2_16384")
    assert bench.texts == {"tiles": "chelsea"} and bench.params["width"] == 16384
    # A photograph that only a tiling names is embedded all the same.
    only_tiled = load_text(tmp_path, (REPO_ROOT / "labs" / "sobel" / "lab.toml").read_text()
                           .replace('name = "sobel"', 'name = "toy"')
                           .replace('tiles = "chelsea"', 'tiles = "astronaut"'))
    assert "astronaut" in only_tiled.dataset_images
    assert '{"astronaut", 512, 512, ' in labspec.emit_datasets(only_tiled, REPO_ROOT / "datasets")
    with pytest.raises(labspec.LabSpecError, match="'tiles' must name a dataset image"):
        load_text(tmp_path, (REPO_ROOT / "labs" / "sobel" / "lab.toml").read_text()
                  .replace('name = "sobel"', 'name = "toy"').replace('tiles = "chelsea"', 'tiles = "../x"'))


@pytest.mark.parametrize("key, method, default, asked, labs_asking", [
    # The labs of a call of 0.1 to 0.3 ms score the median of more, shorter rounds.
    ("timing_rounds", "rounds", 3, 5, {"reduction": 9, "vector_add": 7, "scan": 7, "sobel": 7}),
    ("timing_target_s", "target_s", 0.25, 0.1, {"reduction": 0.125, "vector_add": 0.09, "scan": 0.09, "sobel": 0.05}),
    # The labs whose float product a lower precision would make faster score the median.
    ("timing_quantile", "quantile", 0.05, 0.5, {"matmul": 0.5, "occupancy": 0.5}),
    ("timing_samples_min", "samples_min", 20, 30, {"matmul": 30}),
])
def test_a_lab_may_ask_for_other_timing_than_the_graders(tmp_path, key, method, default, asked, labs_asking):
    assert getattr(load_text(tmp_path, TOY_LAB_TOML).scoring, method)(default) == default
    text = TOY_LAB_TOML.replace("correctness_points = 60\n", f"correctness_points = 60\n{key} = {asked}\n", 1)
    assert getattr(load_text(tmp_path, text).scoring, method)(default) == asked
    every_lab = {path.parent.name: getattr(labspec.load(path).scoring, method)(default)
                 for path in sorted((REPO_ROOT / "labs").glob("*/lab.toml"))}
    assert {lab: value for lab, value in every_lab.items() if value != default} == labs_asking


def test_which_labs_have_only_exact_outputs():
    exact = {path.parent.name for path in sorted((REPO_ROOT / "labs").glob("*/lab.toml"))
             if labspec.load(path).every_output_exact}
    assert exact == {"vector_add", "transpose", "sort", "sobel"}


@pytest.mark.parametrize("rounds, exact, kept, expected", [
    (3, False, 0, [2, 2, 0]),   # float outputs: the default in every round but the last
    (3, False, 6, [6, 6, 0]),   # a lab that keeps more (reduction)
    (3, True, 0, [1, 0, 0]),    # exact outputs: one for the checker, from the first round
    (1, False, 0, [2]),         # one round: it is also the last, and it keeps its samples
    (1, True, 0, [1]),
])
def test_the_kept_samples_of_each_round(tmp_path, rounds, exact, kept, expected):
    scoring = load_text(tmp_path, TOY_LAB_TOML).scoring
    scoring = labspec.Scoring(**{**scoring.__dict__, "kept_samples": kept})
    assert [scoring.kept_in_round(n, rounds, 2, exact) for n in range(1, rounds + 1)] == expected


QUESTIONS = """
[[questions]]
id = "blocks"
text = "What did more blocks do?"
points = 5

[[questions]]
id = "work"
text = "What did more work per thread do?"
points = 2.5
"""


def test_written_questions_load_with_their_points(tmp_path):
    spec = load_text(tmp_path, TOY_LAB_TOML + HANDIN + QUESTIONS)
    assert [(q.id, q.points) for q in spec.questions] == [("blocks", 5.0), ("work", 2.5)]
    assert spec.questions[0].text == "What did more blocks do?"
    assert load_text(tmp_path, TOY_LAB_TOML).questions == ()
    sobel = labspec.load(REPO_ROOT / "labs" / "sobel" / "lab.toml")
    assert sobel.accepts_readme and len(sobel.questions) >= 2  # the lab sheet's extra credit


@pytest.mark.parametrize("text, expected", [
    (TOY_LAB_TOML + QUESTIONS, "[[questions]] are answered in README.md, so [handin] needs readme = true"),
    (TOY_LAB_TOML + HANDIN + QUESTIONS.replace('id = "work"', 'id = "blocks"'), "id 'blocks' is used twice"),
    (TOY_LAB_TOML + HANDIN + QUESTIONS.replace('id = "work"', 'id = "Work More"'), "must be a short lowercase name"),
    (TOY_LAB_TOML + HANDIN + QUESTIONS.replace("points = 2.5", "points = -1"), "'points' must be a number"),
    (TOY_LAB_TOML + HANDIN + QUESTIONS.replace("points = 2.5", "points = 2\nmarks = 3"), "unknown key marks"),
])
def test_written_question_errors_are_sentences(tmp_path, text, expected):
    with pytest.raises(labspec.LabSpecError) as err:
        load_text(tmp_path, text)
    assert expected in str(err.value)
