"""The numbers the prose repeats (README.md, grader/README.md, docs/architecture.md) are the
ones the code defines: Config's defaults (slots per GPU, the timing target, timing rounds,
kept samples) and the labs' lab.toml. Each is read out of the prose and compared, so that
changing a default without its documentation fails here."""
from __future__ import annotations

import dataclasses
import re

import pytest

from cudalab import labspec
from cudalab.config import GIB, KIB, MIB, Config
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
    match = re.search(r"`kept_samples`: (\d+), (\w+) (\d+)\)", text)
    assert match and int(match[1]) == DEFAULTS["kept_samples"]
    assert lab_kept_samples() == {match[2]: int(match[3])}


def detection(f: float, draws: int) -> int:
    """Percent chance that a shortcut taken on a fraction f of the calls is among `draws`
    kept samples."""
    return round(100 * (1 - (1 - f) ** draws))


def test_the_worked_detection_odds_follow_the_defaults():
    """docs/architecture.md works out 1 - (1 - f)^(K (R - 1)) for the default K and for
    the lab that keeps more; every number in it follows from Config and lab.toml."""
    text = prose("docs/architecture.md")
    rounds, kept = DEFAULTS["timing_rounds"], DEFAULTS["kept_samples"]
    match = re.search(r"`R` = (\d+) rounds: 1 - 0\.9\^(\d+) = (\d+) % at `f` = 0\.1 and (\d+) kept samples "
                      r"a round, (\d+) % at `f` = 0\.5", text)
    assert match, "the worked example of the kept samples' odds is gone or reworded"
    r, draws, at_tenth, k, at_half = map(int, match.groups())
    assert (r, k) == (rounds, kept)
    assert draws == kept * (rounds - 1)
    assert (at_tenth, at_half) == (detection(0.1, draws), detection(0.5, draws))

    (lab, lab_kept), = lab_kept_samples().items()
    match = re.search(rf"{lab.capitalize()}'s single float .*? keeps (\d+) a round: 1 - 0\.9\^(\d+) = (\d+) % at "
                      r"`f` = 0\.1, (\d+) % at 0\.2", text)
    assert match, f"the worked example of {lab}'s kept samples is gone or reworded"
    k, draws, at_tenth, at_fifth = map(int, match.groups())
    assert k == lab_kept and draws == lab_kept * (rounds - 1)
    assert (at_tenth, at_fifth) == (detection(0.1, draws), detection(0.2, draws))


@pytest.mark.parametrize("lab", sorted(lab_kept_samples()))
def test_a_lab_toml_that_keeps_more_samples_says_how_many_in_its_comment(lab):
    comments = [line.strip()[1:] for line in (REPO_ROOT / "labs" / lab / "lab.toml").read_text(encoding="utf-8")
                .splitlines() if line.strip().startswith("#")]
    text = " ".join(" ".join(comments).split())
    match = re.search(r"judges (\w+) secretly drawn samples of each session but the last \((\d+) of a grade\), "
                      r"not the default (\w+)", text)
    assert match, f"labs/{lab}/lab.toml no longer explains its kept_samples"
    rounds, kept = DEFAULTS["timing_rounds"], lab_kept_samples()[lab]
    assert number(match[1]) == kept and int(match[2]) == kept * (rounds - 1)
    assert number(match[3]) == DEFAULTS["kept_samples"]


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
    from cudalab import bundle
    said = re.search(r"offers the student verbs only \(([^)]*)\)", prose("README.md"))
    assert said, "README.md no longer says which verbs a student bundle offers"
    assert re.findall(r"`(\w+)`", said[1]) == list(bundle.STUDENT_VERBS)
