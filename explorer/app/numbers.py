"""Numbers for people: a short readable form, the exact value on hover, one mark for "missing".

Pure functions (no widgets): every table the app builds from numbers goes through
:func:`cell_html` or :func:`table_html`, so a value reads the same everywhere.

>>> readable(0.2490234225401737), readable(3.4028234663852886e38), readable(65504.0)
('0.249', '3.403e+38', '65504')
>>> readable(None), readable(9.0), readable(float("nan")), readable(-float("inf"))
('—', '9', 'nan', '-inf')
>>> cell_html(0.2490234225401737)
'<span title="0.2490234225401737">0.249</span>'
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

#: What a cell shows when there is no value (the reason, when known, is its hover text).
MISSING = "—"
#: Significant digits of the readable form.
DIGITS = 4
#: Integers up to this size are written out in full (65504, 57344), larger ones in e-notation.
MAX_PLAIN_INTEGER = 10**7


def is_missing(value: Any) -> bool:
    """True for ``None``, ``pandas.NA``/``NaT`` and empty text: a cell with no value (a float
    NaN is a value: ``nan``)."""
    if value is None or (isinstance(value, str) and value == ""):
        return True
    try:
        import pandas as pd

        return value is pd.NA or value is pd.NaT
    except ImportError:  # pragma: no cover - pandas is a dependency
        return False


def exact(value: Any) -> str:
    """The exact text of a value: ``repr`` of a float (it parses back to the same float), the
    text of anything else, :data:`MISSING` for no value.

    >>> exact(0.1), exact(np.float32(0.1)), exact(7)
    ('0.1', '0.10000000149011612', '7')
    """
    if is_missing(value):
        return MISSING
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return repr(float(value))
    return str(value)


def readable(value: Any, digits: int = DIGITS) -> str:
    """A short form of a number: ``digits`` significant digits, integers in full up to
    :data:`MAX_PLAIN_INTEGER`, ``nan``/``inf`` as such, :data:`MISSING` for no value;
    anything that is not a number as its text.

    >>> readable(1e-9), readable(5.960464477539063e-08), readable(11.09375), readable(-0.0)
    ('1e-09', '5.96e-08', '11.09', '-0')
    >>> readable(0.9999684974876747), readable(4994.09521484375)  # never a whole number that is not
    ('0.99997', '4994.1')
    """
    if is_missing(value):
        return MISSING
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        whole = int(value)
        return str(whole) if abs(whole) < MAX_PLAIN_INTEGER else format(float(whole), f".{digits}g")
    if isinstance(value, float | np.floating):
        number = float(value)
        if math.isnan(number):
            return "nan"
        if math.isinf(number):
            return "inf" if number > 0 else "-inf"
        if number.is_integer() and abs(number) < MAX_PLAIN_INTEGER:
            return ("-" if math.copysign(1.0, number) < 0 else "") + str(int(abs(number)))
        text = format(number, f".{digits}g")
        while (
            abs(number) < MAX_PLAIN_INTEGER and float(text).is_integer() and digits < 17
        ):  # not 1 for 0.99997
            digits += 1
            text = format(number, f".{digits}g")
        return text
    return str(value)


def digits_for(mantissa_bits: int) -> int:
    """Significant decimal digits that tell neighbouring values of a format with
    ``mantissa_bits`` explicit mantissa bits apart (one more than its decimal precision).

    >>> digits_for(10), digits_for(23), digits_for(3)  # float16, float32, float8_e4m3fn
    (5, 9, 3)
    """
    return max(math.ceil((int(mantissa_bits) + 1) * math.log10(2)) + 1, 2)


def cell_html(value: Any, missing_reason: str = "", digits: int = DIGITS) -> str:
    """A table cell's HTML: the readable form, with the exact value as hover text when the two
    differ; for no value, :data:`MISSING` with ``missing_reason`` as hover text.  Escaped.

    >>> cell_html(65504.0), cell_html(None, "no relative error for 0")
    ('65504', '<span title="no relative error for 0">—</span>')
    >>> cell_html("<b>")
    '&lt;b&gt;'
    """
    if is_missing(value):
        if missing_reason:
            return f'<span title="{html.escape(missing_reason, quote=True)}">{MISSING}</span>'
        return MISSING
    short, full = readable(value, digits), exact(value)
    if short == full or _same_number(short, value):
        return html.escape(short)
    return f'<span title="{html.escape(full, quote=True)}">{html.escape(short)}</span>'


def _same_number(text: str, value: Any) -> bool:
    """True when the readable ``text`` already reads back as ``value`` (65504 for 65504.0)."""
    if not isinstance(value, float | np.floating | int | np.integer) or isinstance(value, bool | np.bool_):
        return False
    try:
        return float(text) == float(value) and math.copysign(1.0, float(text)) == math.copysign(
            1.0, float(value)
        )
    except (ValueError, OverflowError):
        return False


def text_html(text: str, title: str = "") -> str:
    """Escaped text, with ``title`` (escaped) as hover text when given."""
    if not title:
        return html.escape(text)
    return f'<span title="{html.escape(title, quote=True)}">{html.escape(text)}</span>'


#: Suffixes a number may carry and still be a number (a percentage, a ratio "2.5×").
_NUMBER_SUFFIXES = ("%", "×")
#: Columns (1-based) the stylesheet can right-align (:func:`numeric_column_classes`).
MAX_ALIGNED_COLUMNS = 40


def is_number_text(text: str) -> bool:
    """True when a cell's shown text is a number: digits with a sign, a decimal point, an exponent,
    thousands separators or a ``%``/``×`` suffix, or ``nan``/``inf``.

    >>> [is_number_text(t) for t in ("65504", "-2.441e-05", "1,234", "inf", "12%", "2.5×")]
    [True, True, True, True, True, True]
    >>> [is_number_text(t) for t in ("float16", "0x2e66", "done: 4 steps", "—", "", "2^15")]
    [False, False, False, False, False, False]
    """
    value = text.strip().replace("\u2212", "-")
    for suffix in _NUMBER_SUFFIXES:
        value = value.removesuffix(suffix).rstrip()
    if not value or value.startswith(("0x", "-0x")) or "_" in value:
        return False
    if "," in value:
        whole = value.lstrip("+-").split(".")[0].split(",")
        if not (whole[0] and len(whole[0]) <= 3 and all(len(g) == 3 for g in whole[1:])):
            return False
        value = value.replace(",", "")
    try:
        float(value)
    except ValueError:
        return False
    return True


def is_numeric_column(texts: Iterable[str]) -> bool:
    """True when a column's cells (their shown texts) are numbers: every cell with a value reads
    as a number (:func:`is_number_text`) and at least one has a value (empty and :data:`MISSING`
    cells have none).  Such a column is right-aligned, a text column left-aligned.

    >>> is_numeric_column(["0.25", MISSING, "1e-09"]), is_numeric_column(["7", "float16"])
    (True, False)
    >>> is_numeric_column([MISSING, ""])
    False
    """
    shown = [t.strip() for t in texts if t.strip() not in ("", MISSING)]
    return bool(shown) and all(is_number_text(t) for t in shown)


def numeric_column_classes(columns: Iterable[Iterable[str]]) -> list[str]:
    """The table classes that right-align its numeric columns: ``px-num-col-<n>`` (1-based) for
    each column (an iterable of its cells' shown texts) that :func:`is_numeric_column`; the app's
    stylesheet aligns the cells of those columns, so the cells' own markup stays as it is.

    >>> numeric_column_classes([["float16"], ["65504"], ["—"]])
    ['px-num-col-2']
    """
    return [
        f"px-num-col-{i}"
        for i, texts in enumerate(columns, start=1)
        if i <= MAX_ALIGNED_COLUMNS and is_numeric_column(texts)
    ]


def shown_text(markup: str) -> str:
    """The text a cell's HTML shows (tags dropped, entities read).

    >>> shown_text('<span title="0.1">0.1</span>'), shown_text("&lt;b&gt;")
    ('0.1', '<b>')
    """
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", markup))


class Markup(str):
    """Text that is already HTML (built by this module): :func:`table_html` inserts it as is."""


def table_html(
    rows: Iterable[Mapping[str, Any]] | Any,
    max_rows: int = 60,
    missing_reasons: Mapping[str, str] | None = None,
    css_class: str = "px-table",
    digits: int = DIGITS,
) -> str:
    """Rows (dicts, or a pandas DataFrame) as an HTML table of readable numbers: every value
    through :func:`cell_html` (exact value on hover), :class:`Markup` values as they are.
    ``missing_reasons`` maps a column to the hover text of its :data:`MISSING` cells; ``digits``
    the significant digits of the readable values.  At most
    ``max_rows`` rows, then a line saying how many more there are.

    >>> table_html([{"x": 0.1, "y": None}]).split("<tbody>")[1]
    '<tr><td>0.1</td><td>—</td></tr></tbody></table>'
    """
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):
        columns = [str(c) for c in rows.columns]
        records: list[Mapping[str, Any]] = rows.to_dict("records")
    else:
        records = list(rows)
        columns = []
        for record in records:
            columns += [str(k) for k in record if str(k) not in columns]
    reasons = dict(missing_reasons or {})
    shown = records[: max(int(max_rows), 0)]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    cells = [[_cell(record.get(c), reasons.get(c, ""), digits) for c in columns] for record in shown]
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in cells)
    aligned = numeric_column_classes([shown_text(row[j]) for row in cells] for j in range(len(columns)))
    classes = " ".join([css_class, *aligned])
    markup = (
        f'<table class="{html.escape(classes, quote=True)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )
    if len(records) > len(shown):
        markup += f"<div class='px-more-rows'>… {len(records) - len(shown):,} more rows</div>"
    return markup


def _cell(value: Any, reason: str, digits: int) -> str:
    if isinstance(value, Markup):
        return str(value)
    return cell_html(value, reason, digits)
