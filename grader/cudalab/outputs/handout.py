"""A lab's handout rendered from its lab.toml and its calibration (the verb and its help
are commands/handout.py): the Markdown from handout.md.j2, and the page made from it with
the ladder's plot in place of its link.
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup

from ..grading import calibration
from ..lab import catalogue
from . import report
from ..grading.calibration import Calibration
from ..config import Config
from ..lab.labspec import LabSpec

PLOT_ID = "ladder-plot"
# What makes the plot's SVG the same on every render: fixed ids, text kept as text (no
# glyph outlines from whatever fonts a machine has), no dates, no version stamp.
SVG_SETTINGS = {"svg.hashsalt": "cudalab-handout", "svg.fonttype": "none", "font.family": "DejaVu Sans",
                "font.size": 9.0}
SVG_METADATA = {"Date": None, "Creator": None}


def tolerance_rule(output) -> str:
    if output.computed:
        return "a bound computed for every element from the data (see why)"
    parts = []
    if output.abs or output.rel or output.ulp < 0:
        parts.append(f"|got - expected| <= {output.abs:g} + {output.rel:g} * |expected|")
    if output.ulp >= 0:
        parts.append("exactly equal" if output.ulp == 0 and not parts else f"within {output.ulp} ULP")
    return " or ".join(parts)


# --- the calibrated figures -------------------------------------------------------------------

def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _ms(value) -> str:
    if not _number(value):
        return "-"
    return f"{value:,.0f}" if value >= 1000 else f"{value:#.4g}".rstrip(".")  # 4 digits: 2.000, 0.1234


def _library_text(library: dict | None) -> str:
    library = library or {}
    if library.get("name") and _number(library.get("median_ms")):
        return f"{library['name']}: {_ms(library['median_ms'])} ms"
    return f"not timed: {library['unavailable']}" if library.get("unavailable") else "-"


def calibrated_view(entry: dict, spec: LabSpec | None = None) -> dict:
    """One GPU model's entry as the handout's table shows it; with `spec`, also the cases it
    timed on other inputs than the lab's bench cases have now (`earlier_inputs`)."""
    cases = entry["cases"]
    rows = []
    for case in cases:
        if case["status"] == "skipped":
            rows.append({"name": case["name"], "median": f"not timed: {case['reason']}", "spread": "-",
                         "range": "-", "copy_roof": "-", "library": "-", "rate": "-"})
            continue
        items = case.get("items_per_s")
        rows.append({"name": case["name"], "median": _ms(case["median_ms"]),
                     "spread": f"{100 * case['spread']:.1f}%" if _number(case.get("spread")) else "-",
                     "range": (f"{_ms(case.get('min_ms'))} to {_ms(case.get('max_ms'))}"
                               if _number(case.get("min_ms")) and _number(case.get("max_ms")) else "-"),
                     "copy_roof": f"{case['copy_gbps']:,.0f} GB/s" if _number(case.get("copy_gbps")) else "-",
                     "library": _library_text(case.get("library")),
                     "rate": f"{items / 1e9:.2f}" if _number(items) else "-"})
    return {"gpu": entry["gpu"]["name"], "provenance": calibration.provenance(entry), "rows": rows,
            "library": any((c.get("library") or {}).get("name") or (c.get("library") or {}).get("unavailable")
                           for c in cases),
            "items_name": next((c.get("items_name") or "items" for c in cases if _number(c.get("items_per_s"))), None),
            "earlier_inputs": calibration.measured_on_other_inputs(entry, spec) if spec is not None else []}


def _rung_cell(rung: dict | None) -> str:
    if rung is None:
        return "-"
    if rung.get("verdict") == "passed" and _number(rung.get("median_ms")):
        return _ms(rung["median_ms"])
    return str(rung.get("verdict") or "not run")


def ladder_view(entry: dict) -> dict:
    """One GPU model's ladder timings as the handout's table shows them: a row per rung
    (numbered as in the list and the plot), a column per bench case, the library's row."""
    ladder = entry["ladder"]
    cases = ladder["cases"]
    names = [r["name"] for r in cases[0]["rungs"]]
    rows = [{"name": f"{i}. {name}",
             "cells": [_rung_cell(case["rungs"][i - 1] if i - 1 < len(case["rungs"]) else None) for case in cases]}
            for i, name in enumerate(names, start=1)]
    libraries = [case.get("library") or {} for case in cases]
    named = next((lib["name"] for lib in libraries if lib.get("name")), None)
    return {"gpu": entry["gpu"]["name"], "settings": f"{ladder['samples']} samples per rung and case, "
                                                    f"calibrated {calibration.date(entry)}",
            "cases": [case["name"] for case in cases], "rows": rows,
            "library": {"name": named, "cells": [_ms(lib.get("median_ms")) for lib in libraries]} if named else None}


def ladder_plot_svg(entries: list[dict]) -> str:
    """The ladder's medians as an SVG (without its XML prologue, to sit inside a page): one
    panel per bench case, the rungs along x as numbered in the handout, the median on a
    log scale, a line per GPU model and, dashed in the same colour, the library's median.
    The same entries give the same bytes on every render."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import LogFormatter

    cases: list[str] = []
    for entry in entries:
        cases += [c["name"] for c in entry["ladder"]["cases"] if c["name"] not in cases]
    columns = min(3, len(cases))
    rows = math.ceil(len(cases) / columns)
    with matplotlib.rc_context(SVG_SETTINGS):
        figure = Figure(figsize=(3.4 * columns, 2.8 * rows + 0.5), layout="constrained")
        FigureCanvasAgg(figure)
        axes = list(figure.subplots(rows, columns, squeeze=False).flat)
        lines = {}  # one legend entry per GPU model, by its colour
        for index, case in enumerate(cases):
            ax = axes[index]
            rung_count = 0
            for colour, entry in enumerate(entries):
                found = next((c for c in entry["ladder"]["cases"] if c["name"] == case), None)
                if found is None:
                    continue
                rung_count = max(rung_count, len(found["rungs"]))
                points = [(i, r["median_ms"]) for i, r in enumerate(found["rungs"], start=1)
                          if r.get("verdict") == "passed" and _number(r.get("median_ms"))]
                # A GPU's name is text, never matplotlib's $math$.
                line = ax.plot([x for x, _ in points], [y for _, y in points], marker="o", color=f"C{colour}",
                               label=entry["gpu"]["name"].replace("$", r"\$"))[0]
                lines.setdefault(colour, line)
                library = found.get("library") or {}
                if _number(library.get("median_ms")):
                    ax.axhline(library["median_ms"], color=f"C{colour}", linestyle="--", linewidth=1)
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(LogFormatter(10))  # 20, 0.5: milliseconds read as numbers
            ax.yaxis.set_minor_formatter(LogFormatter(10, labelOnlyBase=False))
            ax.set_title(case)
            ax.set_xlabel("rung")
            ax.set_ylabel("median ms")
            ax.set_xticks(range(1, rung_count + 1))
            ax.grid(True, which="major", alpha=0.3)
        for ax in axes[len(cases):]:
            ax.set_visible(False)
        handles = [lines[colour] for colour in sorted(lines)]
        handles.append(Line2D([], [], color="0.4", linestyle="--", linewidth=1, label="library"))
        figure.legend(handles=handles, loc="outside lower center", ncols=min(4, len(handles)), frameon=False)
        written = io.StringIO()
        figure.savefig(written, format="svg", metadata=SVG_METADATA)
    svg = written.getvalue()
    return svg[svg.index("<svg"):]


# --- rendering -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Handout:
    markdown: str
    html: str


def plot_href(spec: LabSpec) -> str:
    """Where the Markdown links to the plot: the page beside it."""
    return f"{spec.name}.html#{PLOT_ID}"


def _context(spec: LabSpec, known: Calibration | None, for_bundle: bool = False) -> dict:
    entries = list(known.entries) if known is not None else []
    ladders = [e for e in entries if e.get("ladder")] if spec.ladder else []
    return dict(
        lab=spec, tolerance_rule=tolerance_rule, bundle=for_bundle,
        library_titles={key: library.title for key, library in catalogue.LIBRARIES.items()},
        bytes_per_case={c.name: spec.bytes_moved(c) for c in spec.bench_cases},
        reference_rung=next((r.name for r in spec.ladder if r.source == spec.scoring.reference), ""),
        reference_words=calibration.reference_words(spec),
        calibrated=[calibrated_view(e, spec) for e in entries],
        case_parameters=lambda case: ", ".join(f"{k}={v}" for k, v in calibration.case_inputs(case).items()),
        bench_whys=any(c.why for c in spec.bench_cases),
        ladders=[ladder_view(e) for e in ladders],
        plot_href=plot_href(spec))


def render_markdown(spec: LabSpec, known: Calibration | None, for_bundle: bool = False) -> str:
    """The handout in Markdown; `for_bundle`: as a student bundle hands it out, naming no
    file of solutions/ and only the verbs a bundle offers (bundle.STUDENT_VERBS)."""
    return report.environment().get_template("handout.md.j2").render(**_context(spec, known, for_bundle))


def _plot_in_place_of_its_link(href: str, figure: str):
    """A markdown-it core rule: the paragraph that is only the link `href` becomes `figure`."""
    def rule(state) -> None:
        tokens = state.tokens
        for i in range(len(tokens) - 2):
            children = tokens[i + 1].children or []
            if (tokens[i].type == "paragraph_open" and tokens[i + 1].type == "inline"
                    and [c.type for c in children] == ["link_open", "text", "link_close"]
                    and children[0].attrGet("href") == href):
                tokens[i:i + 3] = [Token("html_block", "", 0, content=figure + "\n", block=True)]
                return
    return rule


def markdown_to_html(markdown: str, plot_href: str | None = None, figure: str | None = None) -> str:
    """Markdown as HTML by markdown-it-py (CommonMark with tables; raw HTML in the text is
    escaped, never passed through). With `figure`, the paragraph that is only a link to
    `plot_href` is replaced by it."""
    converter = MarkdownIt("js-default")
    if figure is not None:
        converter.core.ruler.push("cudalab_plot", _plot_in_place_of_its_link(plot_href, figure))
    return converter.render(markdown)


def render(spec: LabSpec, known: Calibration | None, for_bundle: bool = False) -> Handout:
    """The handout of `spec` with the calibration `known` (None: not calibrated yet), as
    Markdown and as a page; `for_bundle`, see render_markdown."""
    markdown = render_markdown(spec, known, for_bundle)
    figure = None
    ladders = [e for e in known.entries if e.get("ladder")] if known is not None and spec.ladder else []
    if ladders:
        caption = ("The ladder's median time per bench case, rung by rung (numbered as in the list above), on each "
                   "calibrated GPU model; dashed: the library's median. Log scale.")
        figure = f'<figure id="{PLOT_ID}">\n{ladder_plot_svg(ladders)}<figcaption>{caption}</figcaption>\n</figure>'
    body = markdown_to_html(markdown, plot_href(spec), figure)
    html = report.environment().get_template("handout.html.j2").render(title=spec.title, body=Markup(body))
    return Handout(markdown, html)


def render_handout(spec: LabSpec) -> str:
    """The Markdown handout as `cudalab handout` writes it: with the calibration that lies
    beside the lab's lab.toml."""
    return render_markdown(spec, calibration.read(spec.folder / calibration.FILE_NAME, spec.name))


def handout_path(config: Config, spec: LabSpec) -> Path:
    return config.root / "handouts" / f"{spec.name}.md"


def html_path(config: Config, spec: LabSpec) -> Path:
    return config.root / "handouts" / f"{spec.name}.html"
