"""Handouts are rendered from lab.toml and the lab's calibration, as Markdown and as a page
(the same template, converted by markdown-it-py); the stored copies must match what renders
now, and the page escapes whatever lab.toml says."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalab.grading import calibration
from cudalab import cli
from cudalab.outputs import handout
from cudalab.lab import labs, labspec
from cudalab.grading.calibration import Calibration
from cudalab.exit_codes import Cli
from cudalab.lab.labs import available_labs
from conftest import TOY_LAB_TOML
from test_calibrate import H100, H200, entry

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("lab", available_labs(REPO))
def test_stored_handout_is_what_lab_toml_renders(lab):
    spec = labspec.load(REPO / "labs" / lab / "lab.toml")
    rendered = handout.render(spec, calibration.read(spec.folder / calibration.FILE_NAME, lab))
    for name, text in ((f"{lab}.md", rendered.markdown), (f"{lab}.html", rendered.html)):
        stored = REPO / "handouts" / name
        assert stored.is_file(), f"run `cudalab handout {lab}`"
        assert stored.read_text(encoding="utf-8") == text, \
            f"handouts/{name} is out of date: run `cudalab handout {lab}`"
    assert handout.render_handout(spec) == rendered.markdown


def test_handout_says_why_for_every_case_and_tolerance():
    spec = labspec.load(REPO / "labs" / "reduction" / "lab.toml")
    text = handout.render_handout(spec)
    for case in spec.cases:
        assert f"`{case.name}`" in text and case.why in text
    assert "grows with log2(n)" in text


def test_tolerance_rule_in_words():
    exact = labspec.Output("c", "f32", 0.0, 0.0, 0, False, "")
    loose = labspec.Output("c", "f32", 1e-6, 1e-5, -1, False, "")
    both = labspec.Output("c", "f32", 1e-6, 0.0, 2, False, "")
    computed = labspec.Output("s", "f32", 0.0, 0.0, -1, True, "")
    assert handout.tolerance_rule(exact) == "exactly equal"
    assert handout.tolerance_rule(loose) == "|got - expected| <= 1e-06 + 1e-05 * |expected|"
    assert handout.tolerance_rule(both) == "|got - expected| <= 1e-06 + 0 * |expected| or within 2 ULP"
    assert "computed" in handout.tolerance_rule(computed)


def test_without_a_calibration_the_handout_says_so():
    spec = labspec.load(REPO / "labs" / "vector_add" / "lab.toml")
    rendered = handout.render(spec, None)
    assert ("The time of the reference solution is not calibrated yet on any GPU; `cudalab calibrate vector_add` "
            "records it.") in rendered.markdown
    assert "is not calibrated yet on any GPU; <code>cudalab calibrate vector_add</code> records it." in rendered.html
    target = handout.render(labspec.load(REPO / "labs" / "matmul" / "lab.toml"), None).markdown
    assert "The time of the course's target (tiled kernel with 32 x 32 tiles, as in the lecture) is not" in target
    assert "<figure" not in rendered.html and "ladder-plot" not in rendered.markdown


# --- a calibrated lab -------------------------------------------------------------------------------

def toy_spec(tmp_path: Path, toml: str = TOY_LAB_TOML) -> labspec.LabSpec:
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "lab.toml").write_text(toml)
    return labspec.load(tmp_path / "toy" / "lab.toml")


def ladder(simple_ms: float, solution_ms: float, rung_names=("simple", "the solution")) -> dict:
    """The ladder part of an entry, as `cudalab calibrate --ladder` records it."""
    def rung(name, source, ms, speedup):
        return {"name": name, "source": source, "median_ms": ms, "min_ms": ms, "max_ms": ms, "spread": 0.01,
                "gbps": None, "tflops": None, "items_per_s": None, "speedup_over_previous": speedup,
                "verdict": "passed", "message": ""}
    return {"seed": 7, "samples": 30, "warmup": 5,
            "cases": [{"name": "b_1000", "bytes_moved": 12000.0, "copy_gbps": 12.0,
                       "library": {"name": "CUB", "median_ms": 1.5, "gbps": 8.0},
                       "rungs": [rung(rung_names[0], "ladder/simple.cu", simple_ms, None),
                                 rung(rung_names[1], "toy.cu", solution_ms, simple_ms / solution_ms)]}]}


def synthetic(spec: labspec.LabSpec, **ladder_options) -> Calibration:
    return Calibration(spec.folder / calibration.FILE_NAME, spec.name,
                       (entry(H100, median_ms=2.0, ladder=ladder(5.0, 2.0, **ladder_options)),
                        entry(H200, median_ms=1.5, ladder=ladder(4.0, 1.5, **ladder_options))))


def test_a_calibrated_handout_shows_the_figures_the_ladder_and_its_plot(tmp_path):
    spec = toy_spec(tmp_path)
    rendered = handout.render(spec, synthetic(spec))
    md = rendered.markdown
    assert (f"On {H100} (compute capability 9.0), driver 580.95.05 (CUDA 13.0), CUDA runtime 13.0, toolkit 13.0.88, "
            "SM clock 1980 MHz before, 1755 MHz after; calibrated 2026-11-23 with cudalab 0.1.0, 30 samples per "
            "case:") in md
    assert "| `b_1000` | 2.000 | 1.0% | 1.800 to 2.400 | 12 GB/s | CUB: 1.600 ms |" in md
    assert "| `b_1000` | 1.500 | 1.0% | 1.350 to 1.800 | 12 GB/s | CUB: 1.600 ms |" in md
    assert f"The ladder's medians in ms on {H200} (30 samples per rung and case, calibrated 2026-11-23" in md
    assert "| 1. simple | 4.000 |\n| 2. the solution | 1.500 |\n| library: CUB | 1.500 |" in md
    assert "[The same medians as a plot, rung by rung](toy.html#ladder-plot)" in md
    html = rendered.html
    assert html.count('<figure id="ladder-plot">') == 1 and html.count("<svg") == 1
    assert 'href="toy.html#ladder-plot"' not in html  # the page shows the plot in the link's place
    assert f"<td>{H100} (compute" not in html and f"On {H100} (compute capability 9.0)" in html
    assert "<td>1. simple</td>" in html and "<td><code>b_1000</code></td>" in html
    svg = html[html.index("<svg"):html.index("</svg>")]
    assert H100 in svg and H200 in svg and "b_1000" in svg and "<script" not in svg
    again = handout.render(spec, synthetic(spec))
    assert again == rendered, "two renders of the same calibration differ"


def test_times_measured_on_other_inputs_than_the_bench_cases_have_now_say_so(tmp_path):
    spec = toy_spec(tmp_path)
    same = handout.render(spec, synthetic(spec)).markdown
    assert "measured on other inputs" not in same
    earlier = entry(H100)
    earlier["cases"][0]["params"] = {"n": 1000, "pattern": 1}  # the bench case's inputs changed since
    known = Calibration(spec.folder / calibration.FILE_NAME, spec.name, (earlier,))
    md = handout.render(spec, known).markdown
    assert ("These times were measured on other inputs than the bench cases above have now: `b_1000` with "
            "pattern=1 (now no pattern). `cudalab calibrate toy` measures the reference again") in md
    assert calibration.measured_on_other_inputs({"cases": [{"name": "b_1000", "status": "timed", "params": {"n": 7}},
                                                           {"name": "b_1000", "status": "skipped", "params": {}}]},
                                                spec) == [{"name": "b_1000", "then": "n=7", "now": "n=1000"}]
    assert "| `b_1000` | 2.000 |" in md  # the figures stay, said for what they are


def test_the_sobel_handout_names_the_bench_photograph_and_the_older_calibration():
    spec = labspec.load(REPO / "labs" / "sobel" / "lab.toml")
    text = handout.render_handout(spec)
    assert "| `v2_16384` | version=2, width=16384, height=16384, pattern=2, threshold=10000, tiles=chelsea |" in text
    assert "| `v2_camera` | version=2, width=512, height=512, pattern=0, threshold=10000, image=camera |" in text
    assert next(c for c in spec.bench_cases if c.name == "v2_16384").why in text
    # labs/sobel/calibration.json was measured on the flat cells (pattern 1): the handout says so.
    assert "`v2_16384` with pattern=1 (now pattern=2, tiles=chelsea)" in text



def test_a_labs_written_questions_are_in_its_handout_with_their_points():
    spec = labspec.load(REPO / "labs" / "sobel" / "lab.toml")
    text = handout.render_handout(spec)
    assert "Hand in `sobel.cu` and `README.md` with your written answers (below), nothing else" in text
    section = text.split("## Written answers (README.md)", 1)[1].split("\n## ", 1)[0]
    for number, question in enumerate(spec.questions, start=1):
        assert f"{number}. ({question.points:g} points) {question.text}" in section
    assert "`cudalab check` warns when `README.md` is missing" in section
    # A student can do what the questions ask with the student's own verbs (no ladder, no solution).
    assert "cudalab ladder" not in section and "cudalab run sobel . --bench --block" in section
    vector_add = handout.render_handout(labspec.load(REPO / "labs" / "vector_add" / "lab.toml"))
    assert "Written answers" not in vector_add and "`vector_add.cu` and nothing else" in vector_add

def test_the_page_escapes_whatever_lab_toml_says(tmp_path):
    hostile = (TOY_LAB_TOML
               .replace('title = "Toy lab"', 'title = "Toy <script>alert(1)</script> & co"\n'
                                             'summary = "Adds <img src=x onerror=alert(2)> numbers."')
               .replace('name = "c_7"\nn = 7', 'name = "c_7"\nn = 7\nwhy = "a <b>bold</b> claim & <iframe>"')
               .replace('name = "simple"', 'name = "simple <svg onload=alert(3)>"'))
    spec = toy_spec(tmp_path, hostile)
    known = synthetic(spec, rung_names=("simple <svg onload=alert(3)>", "the solution"))
    html = handout.render(spec, known).html
    assert "<title>Toy &lt;script&gt;alert(1)&lt;/script&gt; &amp; co</title>" in html
    assert "<h1>Toy &lt;script&gt;alert(1)&lt;/script&gt; &amp; co</h1>" in html
    assert "Adds &lt;img src=x onerror=alert(2)&gt; numbers." in html
    assert "a &lt;b&gt;bold&lt;/b&gt; claim &amp; &lt;iframe&gt;" in html
    assert "simple &lt;svg onload=alert(3)&gt;" in html
    for tag in ("<script", "<img", "<b>", "<iframe", "<svg onload"):
        assert tag not in html, tag


# --- the verb ------------------------------------------------------------------------------------------

def test_cudalab_handout_writes_both_files_and_checks_both(toy_env, capsys):
    md, page = (toy_env.root / "handouts" / name for name in ("toy.md", "toy.html"))
    assert cli.main(["handout", "toy", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["written"] == [str(md), str(page)]
    assert "not calibrated yet on any GPU" in md.read_text() and page.read_text().startswith("<!DOCTYPE html>")
    assert cli.main(["handout", "toy", "--check"]) == 0
    page.write_text(page.read_text().replace("<h1>", "<h1>Old "))
    assert cli.main(["handout", "all", "--check", "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["labs"] == [{"schema": "cudalab.handout/1", "lab": "toy", "path": str(md),
                                                 "html_path": str(page), "checked_only": True,
                                                 "out_of_date": [str(page)]}]
    assert f"out of date: {page}" in captured.err and "+<h1>Toy lab</h1>" in captured.err
    assert cli.main(["handout", "all"]) == 0 and cli.main(["handout", "toy", "--check"]) == 0


def test_a_calibration_changes_the_handout_and_a_malformed_one_is_a_sentence(toy_env, capsys):
    spec = labs.load_lab(toy_env, "toy")
    assert cli.main(["handout", "toy"]) == 0
    calibration.write(synthetic(spec))  # labs/toy/calibration.json of the toy repository
    assert cli.main(["handout", "toy", "--check"]) == 1
    assert cli.main(["handout", "toy"]) == 0
    assert '<figure id="ladder-plot">' in (toy_env.root / "handouts" / "toy.html").read_text()
    calibration.path(toy_env, spec).write_text('{"schema": "cudalab.calibration/1", "lab": "toy"}')
    capsys.readouterr()
    assert cli.main(["handout", "toy", "--check"]) == Cli.INTERNAL
    err = capsys.readouterr().err
    assert "'entries' must be a list of entries, one per GPU model" in err and "Traceback" not in err
