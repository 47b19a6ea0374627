"""Accessibility and the Training tab's output, headless (issue 28, items 10 and 12).

* contrast: the focus ring, the disabled buttons and the coloured buttons, with the colours read
  here from the stylesheet's text and the ratio computed here by the WCAG 2 formula;
* tables: which columns are numeric (right-aligned) and which are text (left-aligned), against a
  reading of the cells here with Python's own ``float``;
* the training palette: the policies' colours apart in CAM02-UCS (colorspacious);
* the training view: its results table in readable numbers and words, curves that lie on top of
  each other told apart and named, the histogram legend clear of the format bands.

The browser story of the same items is tests/test_story_a11y.py.
"""

from __future__ import annotations

import html
import itertools
import re
from typing import Any

import numpy as np
import pytest

from explorer.app import style

pytestmark = pytest.mark.usefixtures("cache_dir")


# ------------------------------------------------------------------------------------------ contrast


def luminance(colour: str) -> float:
    """WCAG 2 relative luminance of ``#rgb`` or ``#rrggbb`` (computed here, not by the palette)."""
    value = colour.strip().lstrip("#")
    if len(value) == 3:
        value = "".join(c * 2 for c in value)
    r, g, b = (int(value[i : i + 2], 16) / 255 for i in (0, 2, 4))
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def ratio(a: str, b: str) -> float:
    la, lb = sorted((luminance(a), luminance(b)))
    return (lb + 0.05) / (la + 0.05)


def rules(css: str) -> list[tuple[str, str]]:
    """``(selector, declarations)`` of every rule of a flat stylesheet (no @media nesting read)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    css = re.sub(r"@media[^{]*\{((?:[^{}]*\{[^{}]*\})*)\s*\}", r"\1", css)
    return [(s.strip(), d) for s, d in re.findall(r"([^{}]+)\{([^{}]*)\}", css)]


def declared(selector_part: str, prop: str) -> list[str]:
    """The values of ``prop`` in the rules whose selector contains ``selector_part`` (a trailing
    space in it matches the selector's end too)."""
    out = []
    for selector, body in rules(style.CSS):
        if selector_part in selector + " ":
            out += [
                v.replace("!important", "").strip()
                for v in re.findall(rf"(?:^|;)\s*{prop}\s*:\s*([^;]+)", body)
            ]
    return out


def test_focus_ring_is_wide_and_reads_against_the_page_and_every_button() -> None:
    """The `:focus-visible` rule of the whole app draws an outline of at least 2 px whose colour
    has 3:1 against the white page, the unselected tabs and each coloured button at rest (the
    colours read from their rules in the same stylesheet; a hovered or pressed button's darker
    shade is kept from the ring by the rule's 2 px white halo)."""
    outlines = declared(".px-app :focus-visible", "outline")
    assert outlines, "no focus rule for every element of the app"
    width, kind, colour = outlines[-1].split()[:3]
    assert kind == "solid" and float(width.removesuffix("px")) >= 2, outlines
    buttons = [
        v.split()[0]
        for kind in style.BUTTON_BACKGROUNDS
        for v in declared(f".px-app .jupyter-button.mod-{kind} ", "background-color")
    ]
    toggles = [v.split()[0] for v in declared(".px-toggle.mod-active", "background")]
    neighbours = ["#ffffff", "#eeeeee", *buttons, *toggles]
    assert len(buttons) >= 5 and toggles
    assert declared(".px-app :focus-visible", "box-shadow")[-1].endswith("#ffffff")  # the halo
    low = {n: round(ratio(colour, n), 2) for n in neighbours if ratio(colour, n) < 3.0}
    assert not low, f"focus ring {colour} under 3:1 against {low}"


def test_the_old_focus_ring_fails_the_same_check() -> None:
    """The check bites: the previous ring (#0b4f9c) had 1.6:1 against the primary buttons."""
    assert ratio("#0b4f9c", style.BUTTON_BACKGROUNDS["primary"][0]) < 3.0


def test_disabled_buttons_are_grey_and_still_readable() -> None:
    backgrounds = declared("button:disabled", "background")
    colours = declared("button:disabled", "color")
    cursors = declared("button:disabled", "cursor")
    assert backgrounds and colours and cursors == ["not-allowed"]
    bg, fg = backgrounds[-1].split()[0], colours[-1].split()[0]
    r, g, b = (int(bg.lstrip("#")[i : i + 2], 16) for i in (0, 2, 4))
    assert max(r, g, b) - min(r, g, b) <= 8 and min(r, g, b) >= 0xE0, f"{bg} is not a light grey"
    assert ratio(fg, bg) >= 4.5
    for base, _ in style.BUTTON_BACKGROUNDS.values():  # far from every enabled button's colour
        assert abs(luminance(bg) - luminance(base)) > 0.5
    assert "opacity: 1" in "".join(b for s, b in rules(style.CSS) if "button:disabled" in s)


def test_the_skip_link_comes_first_and_focuses_the_selected_tab() -> None:
    import explorer

    app = explorer.App(load_tensorflow=False)
    first = app.widget.children[0].value
    assert re.search(r"<a [^>]*class='px-skip'[^>]*>Skip to the tabs</a>", first)
    assert first.index("<a ") < min(
        i for i in (first.find("<button"), first.find("<input"), len(first)) if i >= 0
    )
    assert ".lm-TabBar-tab.lm-mod-current" in first and ".focus()" in first


# ------------------------------------------------------------------------------------------ tables

TEXTS = {
    "65504": True,
    "-2.441e-05": True,
    "0.1": True,
    "nan": True,
    "-inf": True,
    "1,234,567": True,
    "4.2%": True,
    "float16": False,
    "0x2e66": False,
    "done: 4 steps": False,
    "2^15": False,
    "12,34": False,
    "1e": False,
    "—": False,
}


@pytest.mark.parametrize("text", list(TEXTS))
def test_a_cell_is_a_number_when_python_reads_it_as_one(text: str) -> None:
    from explorer.app.numbers import is_number_text

    assert is_number_text(text) is TEXTS[text]


def _aligned(markup: str) -> set[int]:
    classes = re.search(r'<table[^>]*class="([^"]*)"', markup)
    assert classes is not None
    return {int(n) for n in re.findall(r"px-num-col-(\d+)", classes.group(1))}


ROWS = [
    {"format": "float16", "max": 65504.0, "exponent": -4, "note": None, "bits": "0x3c00", "ratio": None},
    {
        "format": "bfloat16",
        "max": 3.3895313892515355e38,
        "exponent": 7,
        "note": "saturates",
        "bits": "0x3f80",
        "ratio": 2.5,
    },
]


def expected_numeric(rows: list[dict[str, Any]]) -> set[int]:
    """1-based columns whose every given value is a Python number, with at least one given."""
    columns = list(rows[0])
    return {
        i
        for i, c in enumerate(columns, start=1)
        if any(r[c] is not None for r in rows)
        and all(isinstance(r[c], int | float) for r in rows if r[c] is not None)
    }


@pytest.mark.parametrize("builder", ["numbers", "render"])
def test_tables_mark_their_numeric_columns_for_right_alignment(builder: str) -> None:
    from explorer.app import numbers, render

    markup = (numbers.table_html if builder == "numbers" else render.table_html)(ROWS)
    assert _aligned(markup) == expected_numeric(ROWS) == {2, 3, 6}
    # every cell's markup is as before: alignment is the table's class, read by the stylesheet
    assert "<td>float16</td>" in markup and "<td class" not in markup


def test_the_stylesheet_aligns_text_left_and_marked_columns_right() -> None:
    css = style.CSS
    base = [b for s, b in rules(css) if s.startswith(".px-app .px-table th, .px-app .px-table td")]
    assert base and "text-align: left" in base[0]
    right = [s for s, b in rules(css) if "text-align: right" in b and "px-num-col-" in s]
    assert right and ".px-app table.px-num-col-3 > * > tr > :nth-child(3)" in right[0]


# ------------------------------------------------------------------------------------------ palette


def _cam(colours: list[str], cvd: str | None = None) -> np.ndarray:
    from colorspacious import cspace_convert

    rgb = np.array([[int(c.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)] for c in colours])
    if cvd is not None:
        rgb = np.clip(
            cspace_convert(rgb, {"name": "sRGB1+CVD", "cvd_type": cvd, "severity": 100}, "sRGB1"), 0, 1
        )
    return np.asarray(cspace_convert(rgb, "sRGB1", "CAM02-UCS"))


def _hue(colour: str) -> float:
    from colorspacious import cspace_convert

    rgb = np.array([int(colour.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)])
    return float(cspace_convert(rgb, "sRGB1", "JCh")[2])


def test_the_two_float16_policies_have_distinct_colours() -> None:
    """Drawn side by side, mixed_float16 and mixed_float16_no_scaling differ in hue by more than
    60° and by CAM02-UCS ΔE over 40 (the old sky blue: 7° and 25); every two policies over ΔE 20."""
    from explorer.plots.palette import POLICY_COLORS as P

    a, b = P["mixed_float16"], P["mixed_float16_no_scaling"]
    hue = abs(_hue(a) - _hue(b)) % 360
    assert min(hue, 360 - hue) > 60, (a, b, hue)
    seen = _cam([a, b])
    assert np.linalg.norm(seen[0] - seen[1]) > 40
    old = _cam([a, "#56B4E9"])
    assert np.linalg.norm(old[0] - old[1]) < 40  # the check bites
    names = list(P)
    seen = _cam([P[n] for n in names])
    closest = min(
        float(np.linalg.norm(seen[i] - seen[j])) for i, j in itertools.combinations(range(len(names)), 2)
    )
    assert closest > 20, closest


@pytest.mark.parametrize("cvd", ["deuteranomaly", "protanomaly", "tritanomaly"])
def test_the_float16_policies_stay_apart_under_colour_vision_deficiencies(cvd: str) -> None:
    from explorer.plots.palette import POLICY_COLORS as P

    seen = _cam([P["mixed_float16"], P["mixed_float16_no_scaling"]], cvd)
    assert np.linalg.norm(seen[0] - seen[1]) > 20


# ------------------------------------------------------------------------------------------ training


def _epoch(policy: str, loss: float, acc: float, scale: float | None) -> Any:
    from explorer.training.config import EpochRecord

    return EpochRecord(policy, 0, loss, acc, loss, acc, scale, 0.009, 0.0, 0.0, 0, 0.01, 1.0, 1.0)


def _hist(policy: str, scale: float | None, seed: int) -> Any:
    from explorer.training.config import GradientHistogram

    edges = list(np.arange(-40.0, 9.0, 1.0))
    rng = np.random.default_rng(seed)
    counts = np.histogram(rng.normal(-8 + (15 if scale else 0), 2, 5000), bins=edges)[0]
    return GradientHistogram(policy, 3, "float16", edges, counts.tolist(), 30, 0, 5030, scale)


def _steps(policy: str, scale: float | None) -> list[Any]:
    from explorer.training.config import StepRecord

    return [StepRecord(policy, s, 0, 2.3, 0.1, scale, 0.009, 0.0, 0.0, False, 0.01, s / 4) for s in range(4)]


def _runs() -> list[Any]:
    from explorer.app.training_tab import LiveRun

    same = (0.30324396084655414, 0.09444444626569748)
    specs = [
        ("float32", *same, None, None),
        ("mixed_float16", *same, 32768.0, 1),
        ("mixed_float16_no_scaling", *same, None, 2),
        ("float16", 43.0771484375, 0.07777778059244156, None, 3),
    ]
    return [
        LiveRun(p, [_epoch(p, loss, acc, scale)], _steps(p, scale), [_hist(p, scale, seed or 0)])
        for p, loss, acc, scale, seed in specs
    ]


def _visible(markup: str) -> str:
    no_titles = re.sub(r"<[^>]+>", " ", markup)
    return html.unescape(no_titles)


def test_training_results_table_shows_readable_numbers_and_words() -> None:
    """No float in its full repr and no "None" where a reader looks; each number within 0.05 % of
    the value, the exact value on hover, and a missing value as a dash with its reason."""
    import explorer
    from explorer.training.parallel import RunStatus

    app = explorer.App(tab="training", load_tensorflow=False)
    tab = app.tab("training")
    runs = _runs()
    statuses = {r.policy: RunStatus(r.policy, "done", 4, 4) for r in runs}
    markup = tab._summary_table(runs, statuses, 3)
    shown = _visible(markup)
    assert "None" not in shown and "0.30324396084655414" not in shown
    assert 'title="0.30324396084655414"' in markup  # the exact value on hover
    numbers_shown = [float(x) for x in re.findall(r"(?<![\w.])\d+\.\d+(?:e[-+]?\d+)?", shown)]
    assert numbers_shown and all(len(str(x).replace(".", "").lstrip("0")) <= 6 for x in numbers_shown)
    loss = next(x for x in numbers_shown if abs(x - 0.30324396084655414) < 0.01)
    assert abs(loss - 0.30324396084655414) / 0.30324396084655414 < 5e-4
    assert "—" in shown and "without loss scaling" in markup
    assert "done: 4 steps" in shown


def test_identical_curves_stay_visible_and_are_named() -> None:
    """float32 and the two mixed_float16 policies trained to the same loss: float32 is drawn on
    top, open, so the points it covers show through; each policy has its own marker; the panel
    names the curves that coincide; float16's different curve is not named."""
    from explorer.plots.training import plot_curves

    ax = plot_curves(_runs(), "loss")
    lines = {str(line.get_label()): line for line in ax.get_lines()}
    top = lines["float32"]
    assert top.get_zorder() > max(line.get_zorder() for k, line in lines.items() if k != "float32")
    assert top.get_markerfacecolor() == "none" and top.get_markersize() > max(
        line.get_markersize() for k, line in lines.items() if k != "float32"
    )
    markers = [line.get_marker() for line in lines.values()]
    assert len(set(markers)) == len(markers)
    note = ax.get_title(loc="left")
    assert all(p in note for p in ("float32", "mixed_float16", "mixed_float16_no_scaling")), note
    assert "coincide" in note and "float16 " not in note.replace("mixed_float16", "")
    lo, hi = ax.get_xlim()
    shown = [t for t in ax.get_xticks() if lo <= t <= hi]
    assert shown == [1.0], f"one epoch, one whole-epoch tick: {shown}"


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_histogram_legend_stays_clear_of_the_format_bands() -> None:
    """In the live figure, the gradient histogram's legend box overlaps none of the format bands
    (float16's included), measured on the drawn figure in display coordinates."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import to_hex

    from explorer.plots.palette import format_color
    from explorer.plots.training import live_training_figure

    fig = live_training_figure(_runs())
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    hist_ax = next(a for a in fig.axes if a.get_xlabel().startswith("log2"))
    legend = hist_ax.get_legend()
    assert legend is not None
    box = legend.get_window_extent(renderer)
    bands = [c for c in hist_ax.collections if isinstance(c, PolyCollection)]
    float16 = [
        c for c in bands if to_hex(c.get_facecolor()[0], keep_alpha=False) == format_color("float16").lower()
    ]
    assert float16, "no float16 band drawn"
    for band in bands:
        extent = band.get_window_extent(renderer)
        assert not box.overlaps(extent), (box, extent)
