"""Everything from a snapshot that reaches HTML is escaped: the pandas table, its tooltips and labels."""

from __future__ import annotations

import html

import pandas as pd
import pytest

from explorer.analysis.availability_rows import EXTRA_KEYS, ROW_KEYS
from tests.support import hostile


@pytest.mark.parametrize("payload", [*hostile.PAYLOADS, hostile.SHORT_PAYLOAD])
def test_the_checker_finds_each_payload_raw_and_passes_it_escaped(payload: str) -> None:
    """The oracle of the escaping tests: it must flag every payload as markup, and none once escaped."""
    assert hostile.dangerous_markup(payload)
    assert hostile.dangerous_markup(html.escape(payload)) == []
    assert payload in hostile.visible_text(html.escape(payload))


def _frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(ROW_KEYS) + list(EXTRA_KEYS))


def test_styled_table_escapes_cells_labels_tooltips_and_caption() -> None:
    from explorer.plots.availability import styled_table

    payload = hostile.ALL_PAYLOADS
    rows = [
        hostile.row(
            op=payload,
            dtype=payload,
            backend=payload,
            device=payload,
            mode=payload,
            status=payload,
            error=payload,
            explanation=payload,
            workaround=payload,
            workaround_how=payload,
        ),
        hostile.row(op="range", dtype="float16", backend=payload, device=payload, mode=payload, status="ok"),
    ]
    markup = styled_table(_frame(rows), payload, payload, payload).to_html()
    assert hostile.dangerous_markup(markup) == []
    text = hostile.visible_text(markup)
    for piece in hostile.PAYLOADS:
        assert piece in text  # shown, as text (cell, labels, tooltip title and caption)


def test_styled_table_tooltips_keep_their_lines() -> None:
    """A tooltip with line breaks is a title attribute (a CSS content string with a raw newline
    would show nothing), and it holds the status, the explanation, the error's first line and the
    workaround."""
    from explorer.plots.availability import styled_table

    rows = [
        hostile.row(
            explanation="No float16 kernel.",
            error="NotFoundError: line one\nline two",
            workaround_how="create in float32, then cast",
            workaround="x = 1\ny = 2",
        ),
    ]
    markup = styled_table(_frame(rows), "tensorflow", "CPU", "registry").to_html()
    title = html.unescape(markup.split('title="', 1)[1].split('"', 1)[0])
    assert title.splitlines() == [
        rows[0]["status"],
        "No float16 kernel.",
        "error: NotFoundError: line one",
        "workaround: create in float32, then cast",
        "x = 1",
        "y = 2",
    ]
