"""The Accuracy tab headless (issue #28 items 5, 6, 9, 12, 13): one selection at a time, tables
that choose their columns, vector figures with readable legends, the overflow label's contrast.
Oracles: NumPy run here against exactly rounded references (tests/support/oracles.py), the WCAG
contrast formula written out here, the SVG read back with the standard library."""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np
import pytest

from tests.support.sampling import sample_during

pytestmark = pytest.mark.usefixtures("cache_dir")


@pytest.fixture
def app() -> Any:
    import explorer

    return explorer.App(
        load_tensorflow=False, tab="accuracy", op="exp", dtypes=["float16"], backends=["numpy", "emulated"]
    )


def _headers(markup: str) -> list[list[str]]:
    tables = re.findall(r"<table.*?</table>", markup, re.S)
    return [[re.sub("<.*?>", "", h) for h in re.findall(r"<th>(.*?)</th>", t)] for t in tables]


def _outside_folds(markup: str) -> str:
    return re.sub(r"<details.*?</details>", "", markup, flags=re.S)


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_switching_op_never_shows_the_earlier_ops_results(app: Any, monkeypatch: Any) -> None:
    import explorer.app.accuracy_tab as accuracy_tab

    tab = app.tabs["accuracy"]
    figure = tab.plot.outputs[0]["data"]["text/html"]
    assert "exp in float16" in tab.answer.value and "exp in float16" in figure
    slow = accuracy_tab.cached_sweep

    def slower(*args: Any, **kwargs: Any) -> Any:
        time.sleep(1.5)  # a sweep that takes a while: the note's progress shows
        return slow(*args, **kwargs)

    monkeypatch.setattr(accuracy_tab, "cached_sweep", slower)

    def shown() -> tuple[str, str, str, str]:
        """What a visitor sees: nothing of answer, plot and details while the tab is marked computing."""
        if "px-computing" in tab.widget._dom_classes:
            return "", "", "", tab.status.value
        plot = "".join(o["data"].get("text/html", "") for o in tab.plot.outputs)
        return tab.answer.value, plot, tab.details.value, tab.status.value

    seen = sample_during(lambda: app.state.set(op="tanh"), shown)  # renders now, in this thread
    about_tanh = [s for s in seen if "tanh" in s[0] + s[1] + s[2] + s[3]]
    assert about_tanh
    # once anything says tanh, nothing says exp: not the answer, figure, tables or note
    assert not [s for s in about_tanh if "exp in float16" in s[0] + s[1] + s[2] + s[3]]
    notes = [s[3] for s in about_tanh if "Computing tanh in float16 …" in s[3]]
    assert notes and any("float16: sweeping" in n for n in notes), [s[3] for s in seen][-3:]
    # answer and figure written together: never one of them without the other
    assert not [s for s in seen if ("tanh in float16" in s[0]) != ("tanh in float16" in s[1])]
    answer, plot, _, status = shown()
    assert "tanh in float16" in answer and "<svg" in plot and "Computing" not in status


def test_a_render_of_a_selection_left_writes_nothing(app: Any) -> None:
    tab = app.tabs["accuracy"]
    before = (tab.answer.value, tab.plot.outputs, tab.details.value)
    tab._rendering = ("tanh", ("float16",), ("numpy",))  # what the state held when it started
    tab.render()
    assert (tab.answer.value, tab.plot.outputs, tab.details.value) == before
    assert tab.dirty


def test_tables_show_the_newcomer_columns_and_fold_the_rest(app: Any) -> None:
    from explorer.app.accuracy_tab import MORE_COLUMNS, NEWCOMER_COLUMNS, SUM_COLUMNS
    from tests.support import oracles

    app.state.set(op="tanh", backends=["numpy"])
    markup = app.tabs["accuracy"].details.value
    visible = _headers(_outside_folds(markup))
    assert list(NEWCOMER_COLUMNS) in visible and list(SUM_COLUMNS) in visible
    assert all(len(h) <= 5 for h in visible)
    folded = _headers("".join(re.findall(r"<details.*?</details>", markup, re.S)))
    assert ["backend", *MORE_COLUMNS] in folded and ["accumulator", "pairwise sum"] in folded
    # item 13: one backend ran, so nothing was compared (no "0 inputs where backends disagree")
    assert "Only numpy ran, so there is no other backend to compare with." in markup
    assert "disagree" not in markup
    # the numbers: NumPy's tanh over every finite float16 against tanh rounded exactly
    x = oracles.finite_values("float16")
    got = np.tanh(x.astype(np.float16)).astype(np.float64)
    want = oracles.round_array(np.tanh(x), "float16")
    steps = np.abs(oracles.number_line_index(got, "float16") - oracles.number_line_index(want, "float16"))
    row = re.search(r"<tr><td>numpy</td>(.*?)</tr>", _outside_folds(markup)).group(1)  # type: ignore[union-attr]
    cells = re.findall(r"<td>(.*?)</td>", row)
    assert float(re.sub("<.*?>", "", cells[0])) == float(steps.max())
    assert f'title="{float(np.mean(steps == 0))!r}"' in cells[2] or float(cells[2]) == np.mean(steps == 0)
    assert int(cells[3]) == x.size


def test_the_accuracy_figure_is_sanitized_svg_with_12px_legends(app: Any) -> None:
    from explorer.app.vector import sanitize

    plot = app.tabs["accuracy"].plot.outputs[0]["data"]["text/html"]
    assert "<img" not in plot and "<script" not in plot and "<style" not in plot
    root = ET.fromstring(plot)
    width_units = float(root.attrib["viewBox"].split()[2])
    max_px = float(re.search(r"max-width:(\d+)px", root.attrib["style"]).group(1))  # type: ignore[union-attr]
    legends = [g for g in root.iter("g") if g.attrib.get("id", "").startswith("legend")]
    sizes = [
        float(re.search(r"font-size: ([\d.]+)px", t.attrib["style"]).group(1))  # type: ignore[union-attr]
        for g in legends
        for t in g.iter("text")
    ]
    assert sizes
    narrowest_panel_px = 447  # a side-by-side panel's content at 1024 px (measured in the story)
    for scale in (narrowest_panel_px / width_units, max_px / width_units):
        assert min(sizes) * scale >= 12
    hostile = sanitize(
        '<svg xmlns="http://www.w3.org/2000/svg"><style>*{display:none}</style>'
        '<g onclick="x()"><text>t</text><image href="http://x/y.png"/></g></svg>'
    )
    text = ET.tostring(hostile, encoding="unicode")
    assert "style" not in text and "onclick" not in text and "http://" not in text


def _wcag_contrast(a: str, b: str) -> float:
    def lum(colour: str) -> float:
        rgb = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_overflow_labels_are_readable_on_the_band_they_sit_on() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_hex

    from explorer.plots.ranges import plot_number_lines
    from explorer.queries.ranges import number_lines

    formats = ["float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"]
    fig = plot_number_lines(number_lines(formats))
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    labels = [t for t in ax.texts if t.get_text().startswith("overflow →")]
    assert len(labels) == len(formats)
    for label in labels:
        box = label.get_window_extent(renderer)
        under = [
            p
            for p in ax.patches
            if (e := p.get_window_extent(renderer)).x0 <= box.x0
            and box.x1 <= e.x1
            and e.y0 <= (box.y0 + box.y1) / 2 <= e.y1
        ]
        assert len(under) == 1, f"{label.get_text()} straddles bands"
        ratio = _wcag_contrast(to_hex(label.get_color()), to_hex(under[0].get_facecolor()))
        assert ratio >= 4.5, (label.get_text(), to_hex(under[0].get_facecolor()), ratio)


def test_the_ulp_plot_samples_points_over_every_input_and_ticks_round_values() -> None:
    """A subsample of thousands of correctly rounded points reaches both ends of the inputs (it
    once kept only the first ones: bfloat16's positive half was missing), and the x ticks are 0
    and signed powers of ten inside the axis."""
    from explorer.plots.accuracy import plot_ulp_error
    from explorer.queries.accuracy import accuracy
    from tests.support import oracles

    result = accuracy("tanh", "bfloat16", ("emulated",))
    ax = plot_ulp_error(result, max_points=500).axes[0]
    drawn = np.asarray(ax.lines[0].get_xdata(), dtype=np.float64)
    every = oracles.finite_values("bfloat16")
    assert drawn.size <= 500 and drawn.min() == every.min() and drawn.max() == every.max()
    lo, hi = ax.get_xlim()
    ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
    assert all(t == 0 or np.log10(abs(t)).is_integer() for t in ticks) and len(ticks) <= 7, ticks
