"""History strips: what every shipped TensorFlow release declares for one kernel cell, as HTML.

Pure functions of a history: a sequence of ``(version, status, reason)`` entries, oldest first
(:func:`explorer.analysis.releases.history` returns them).  Every string that reaches the
markup is escaped with :func:`html.escape`.  Colours and letters are the statuses' own
(:mod:`explorer.plots.palette`, checked under simulated colour-vision deficiencies), and each box
carries its letter, so colour is never the only cue; a release whose status differs from the one
before is outlined and marked.

>>> strip = history_strip_html([("2.17.1", "no_kernel", ""), ("2.18.0", "ok", "")], "Range float16 CPU")
>>> strip.count("class='px-history-box"), "changed in 2.18.0" in strip
(2, True)
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from explorer.plots.availability import title_text
from explorer.plots.palette import (
    ABSENT_COLOR,
    ABSENT_GLYPH,
    OUTLINE,
    STATUS_COLORS,
    STATUS_GLYPHS,
    UNKNOWN_COLOR,
    UNKNOWN_GLYPH,
    text_color,
)

#: the statuses a release history has: three of :data:`explorer.outcome.STATUSES`, and absent
_HISTORY_STATUSES: tuple[str, ...] = ("ok", "no_kernel", "unsupported_dtype")
#: one letter per history status (the CLI's ``--history`` table prints the same letters)
STATUS_LETTERS: dict[str, str] = {s: STATUS_GLYPHS[s] for s in _HISTORY_STATUSES} | {"absent": ABSENT_GLYPH}
#: what each status means, for legends and tooltips
STATUS_MEANINGS: dict[str, str] = {
    "ok": "a kernel is registered",
    "no_kernel": "the op takes the dtype, but no kernel is registered for the device type",
    "unsupported_dtype": "the op's signature does not take the dtype",
    "absent": "the release has no such op, dtype or device type",
}
#: the statuses' colours (:data:`explorer.plots.palette.STATUS_COLORS`) and a light grey for absent
HISTORY_COLORS: dict[str, str] = {s: STATUS_COLORS[s] for s in _HISTORY_STATUSES} | {"absent": ABSENT_COLOR}
#: letter of a status not listed above (its colour is :data:`explorer.plots.palette.UNKNOWN_COLOR`)
UNKNOWN_LETTER = UNKNOWN_GLYPH


def status_letter(status: str) -> str:
    """The letter of a history status (``?`` for one this module does not know).

    >>> status_letter("ok"), status_letter("no_kernel"), status_letter("weird")
    ('+', 'N', '?')
    """
    return STATUS_LETTERS.get(status, UNKNOWN_LETTER)


def legend_text() -> str:
    """The letters and what they mean, as one plain line.

    >>> legend_text().split(";")[0]
    '+ ok: a kernel is registered'
    """
    return "; ".join(f"{STATUS_LETTERS[s]} {s}: {STATUS_MEANINGS[s]}" for s in STATUS_LETTERS)


def changed_indices(entries: Sequence[Any]) -> list[int]:
    """Positions of the entries whose status differs from the entry before (the first is the baseline).

    >>> changed_indices([("a", "ok", ""), ("b", "ok", ""), ("c", "no_kernel", ""), ("d", "ok", "")])
    [2, 3]
    """
    return [i for i in range(1, len(entries)) if entries[i][1] != entries[i - 1][1]]


def _box(version: str, status: str, reason: str, changed_from: str | None) -> str:
    known = status in STATUS_LETTERS
    color = HISTORY_COLORS.get(status, UNKNOWN_COLOR)
    tip = f"TensorFlow {version}: {status}"
    if reason:
        tip += f" ({reason})"
    elif known:
        tip += f" ({STATUS_MEANINGS[status]})"
    if changed_from is not None:
        tip += f"; changed from {changed_from}"
    border = "3px solid #000000" if changed_from is not None else f"1px solid {OUTLINE}"
    style = (
        f"display:inline-block;min-width:44px;margin:1px;padding:2px 3px;text-align:center;"
        f"background:{color};color:{text_color(color)};border:{border};border-radius:3px;font-size:80%;"
        "line-height:1.2;vertical-align:top"
    )
    css_class = "px-history-box" + (" px-history-changed" if changed_from is not None else "")
    mark = "&#9650;" if changed_from is not None else ""  # ▲: the change is not told by colour alone
    return (
        f"<span class='{css_class}' role='listitem' style='{style}' title='{title_text(tip)}' "
        f"data-version='{html.escape(version)}' data-status='{html.escape(status)}'>"
        f"<span style='font-size:85%'>{html.escape(version)}</span><br>"
        f"<b>{html.escape(status_letter(status))}</b>{mark}</span>"
    )


def history_strip_html(entries: Sequence[Any], title: str = "") -> str:
    """One small box per release (version, status letter, colour, tooltip with the status and the
    reason), changes outlined and marked with a triangle, and a line saying where it changed.

    ``entries``: ``(version, status, reason)`` sequences (``ReleaseStatus`` works), oldest first.

    >>> markup = history_strip_html([("2.12.0", "absent", "no op <X>"), ("2.13.0", "ok", "")])
    >>> "no op &lt;X&gt;" in markup and "<X>" not in markup
    True
    """
    changed = set(changed_indices(entries))
    boxes = [
        _box(str(v), str(s), str(r), str(entries[i - 1][1]) if i in changed else None)
        for i, (v, s, r) in enumerate((e[0], e[1], e[2] if len(e) > 2 else "") for e in entries)
    ]
    esc = html.escape
    if not entries:
        note = "no shipped release"
    elif changed:
        note = "changed in " + ", ".join(
            f"{esc(str(entries[i][0]))} ({esc(str(entries[i - 1][1]))} &#8594; {esc(str(entries[i][1]))})"
            for i in sorted(changed)
        )
    else:
        note = f"the same in all {len(entries)} releases ({esc(str(entries[0][1]))})"
    label = esc(title)
    head = f"<div class='px-history-title' style='font-size:90%'><b>{label}</b></div>" if title else ""
    return (
        f"<div class='px-history' role='list' aria-label='{label or 'history'}' style='margin:4px 0'>"
        f"{head}{''.join(boxes)}"
        f"<div class='px-history-note' style='font-size:80%;color:#333'>{note}</div></div>"
    )


def history_legend_html() -> str:
    """The colour and letter of each status, as a one-line HTML key.

    >>> "unsupported_dtype" in history_legend_html()
    True
    """
    items = "".join(
        f"<span style='display:inline-block;min-width:16px;text-align:center;background:{HISTORY_COLORS[s]};"
        f"color:{text_color(HISTORY_COLORS[s])};border:1px solid {OUTLINE};margin:0 4px 0 10px'>"
        f"{html.escape(STATUS_LETTERS[s])}</span>"
        f"{html.escape(s)}"
        for s in STATUS_LETTERS
    )
    mark = "<span style='margin-left:10px'><b>&#9650;</b> outlined: changed since the release before</span>"
    return f"<div class='px-history-key' style='font-size:80%'>{items}{mark}</div>"


__all__ = [
    "HISTORY_COLORS",
    "STATUS_LETTERS",
    "STATUS_MEANINGS",
    "changed_indices",
    "history_legend_html",
    "history_strip_html",
    "legend_text",
    "status_letter",
]
