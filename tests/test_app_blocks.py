"""The Blocks tab, headless: its own controls drive the query and the plot; the numbers it
shows are the ``blocks`` verb's (one query for both)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from explorer.cli import main


@pytest.fixture(scope="module")
def tab() -> Any:
    import explorer

    app = explorer.App(load_tensorflow=False, tab="blocks")
    return app.select("blocks")


def _cells(markup: str, fmt: str) -> list[str]:
    row = re.search(rf"<tr[^>]*>\s*<td[^>]*>{fmt}</td>(.*?)</tr>", markup, re.S)
    assert row, (fmt, markup[:500])
    return re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)


def test_the_tab_shows_the_verbs_numbers_and_a_histogram(tab: Any, capsys: Any) -> None:
    assert tab.tensor.value == "outliers" and tab.selected == ["mxfp8_e4m3", "mxfp4_e2m1", "nvfp4"]
    tab.refresh()
    fig = tab.figure
    axes = fig.axes[0]
    assert axes.get_yscale() == "log"
    labels = [t.get_text() for t in axes.get_legend().get_texts()]
    assert [label.split(":")[0] for label in labels] == [
        "mxfp8_e4m3", "mxfp4_e2m1", "nvfp4", "float8_e4m3fn per tensor", "float4_e2m1fn per tensor",
    ]  # fmt: skip
    assert main(["blocks", "--format", "nvfp4", "--tensor", "outliers", "--block-size", "16", "--json"]) == 0
    verb = json.loads(capsys.readouterr().out)["result"]["formats"][0]
    assert f"RMS {verb['rel_rms']:.3g}" in labels[2]
    shown = _cells(tab.details.value, "nvfp4")  # scaling, bits, rel_rms (exact value on hover), ...
    assert shown[:2] == ["block", "4.5"]
    assert f'<span title="{verb["rel_rms"]!r}">' in shown[2]
    assert f'<span title="{verb["flushed"]!r}">' in shown[4]


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_the_controls_redraw_and_an_empty_selection_says_so(tab: Any) -> None:
    count = tab.render_count
    tab.formats["mxint8"].value = True
    assert tab.render_count == count + 1 and "mxint8" in tab.details.value
    tab.tensor.value = "laplace"
    assert "laplace (256 x 256)" in tab.details.value
    count = tab.render_count
    tab.select_formats([])  # every button off, one redraw
    assert tab.render_count == count + 1 and not any(b.value for b in tab.formats.values())
    assert tab.figure is None and "Select at least one block format" in tab.status.value
    tab.select_formats(["NVFP4"])
    assert tab.figure is not None and "nvfp4" in tab.details.value and tab.selected == ["nvfp4"]
