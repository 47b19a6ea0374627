"""The Kernels tab's release chips: for each selected cell (raw op × dtype × registry device type)
one chip per TensorFlow release whose registry ships with explorer, as buttons (an ipywidgets
``ToggleButtons`` per cell: each chip is a ``<button>``, reached with Tab and pressed with Enter or
Space).  Pressing a chip calls back with the cell and the release; the tab tells that release
in the details panel beside the heatmap.

The answer is :func:`explorer.queries.history.release_history`'s (the one ``precision-explorer
kernels --history`` prints), read from the shipped registries: it shows while TensorFlow is
still loading.  Colour is never the only cue: each chip carries its status letter, a changed
release a triangle, and its tooltip the status in words.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from explorer.app.render import message_html

if TYPE_CHECKING:
    from explorer.app.context import AppContext
    from explorer.queries.history import CellHistory, ReleaseHistory

#: most cells (strips of chips) shown at once (an op with many raw ops x many dtypes)
MAX_CHIP_STRIPS = 8


def chip_label(version: str, status: str, changed: bool) -> str:
    """A chip's text: the release, its status letter, a triangle when it changed.

    >>> chip_label("2.18.0", "ok", True), chip_label("2.17.1", "no_kernel", False)
    ('2.18.0 +▲', '2.17.1 N')
    """
    from explorer.plots.history import status_letter

    return f"{version} {status_letter(status)}{'▲' if changed else ''}"


def chip_tooltip(version: str, status: str, reason: str, changed_from: str | None) -> str:
    """A chip's tooltip: the status in words (plain text: the browser shows it as a title).

    >>> chip_tooltip("2.18.0", "ok", "", "no_kernel")
    'TensorFlow 2.18.0: ok (a kernel is registered); changed from no_kernel. Press for details.'
    """
    from explorer.plots.history import STATUS_MEANINGS

    tip = f"TensorFlow {version}: {status} ({reason or STATUS_MEANINGS.get(status, status)})"
    if changed_from is not None:
        tip += f"; changed from {changed_from}"
    return tip + ". Press for details."


def chips_css(slot: int, statuses: list[str], changed: list[bool]) -> str:
    """The colours of slot ``slot``'s chips (``nth-child`` rules: one ToggleButtons has no
    per-button class), the pressed chip marked by more than colour (a thick inset ring)."""
    from explorer.plots.history import HISTORY_COLORS
    from explorer.plots.palette import OUTLINE, UNKNOWN_COLOR, text_color

    scope = f".px-app .px-chips-{slot} .widget-toggle-button"
    rules = []
    for k, (status, change) in enumerate(zip(statuses, changed, strict=True), start=1):
        colour = HISTORY_COLORS.get(status, UNKNOWN_COLOR)
        border = "3px solid #000000" if change else f"1px solid {OUTLINE}"
        rules.append(
            f"{scope}:nth-child({k}){{background:{colour} !important;color:{text_color(colour)} !important;"
            f"border:{border} !important}}"
        )
    return "".join(rules)


#: what every slot shares: chips wrap, the pressed one is ringed and underlined
CHIPS_CSS = (
    ".px-app .px-chips > div { display:flex; flex-wrap:wrap; gap:2px; }"
    ".px-app .px-chips .widget-toggle-button { font-size:80%; padding:0 4px; height:auto;"
    " line-height:1.6; min-width:56px; }"
    ".px-app .px-chips .widget-toggle-button.mod-active { box-shadow: inset 0 0 0 3px #000000,"
    " inset 0 0 0 5px #ffffff !important; text-decoration: underline; font-weight: bold; }"
)


class ReleaseChips:
    """The selection's history as chips (``.widget``); ``on_pick(cell, entry)`` is called with
    the :class:`~explorer.queries.history.CellHistory` and the release entry of a pressed chip."""

    def __init__(self, ctx: AppContext, on_pick: Callable[[Any, Any], None]) -> None:
        from explorer.plots.history import history_legend_html

        self.ctx = ctx
        self.state = ctx.state
        self.on_pick = on_pick
        self.head = widgets.HTML("").add_class("px-history-head")
        self.legend = widgets.HTML(history_legend_html() + f"<style>{CHIPS_CSS}</style>")
        self.notes = widgets.HTML("")
        self.strips = widgets.VBox([])
        #: (title, chips, note) per slot, made when first needed and reused
        self._slots: list[tuple[widgets.HTML, widgets.ToggleButtons, widgets.HTML]] = []
        #: the cell each shown slot holds
        self.cells: list[CellHistory] = []
        self._updating = False
        self.widget = widgets.VBox([self.head, self.legend, self.strips, self.notes])
        self.widget.add_class("px-kernels-history")

    # ------------------------------------------------------------------ data

    def answer(self, raw_ops: tuple[str, ...], dtypes: tuple[str, ...], device_type: str) -> ReleaseHistory:
        """The history of ``raw_ops`` × ``dtypes`` on ``device_type`` (cached per cell set)."""
        from explorer.queries.history import release_history

        key = ("history-answer", raw_ops, dtypes, device_type)
        return self.ctx.cache.get(
            key, lambda: release_history(raw_ops, dtypes, [device_type], MAX_CHIP_STRIPS)
        )

    def update(self) -> None:
        """Show the selection's cells: the op's raw ops × the selected dtypes ×
        :attr:`AppState.registry_device_type` (a failure is a message in their place)."""
        from explorer.queries.history import selected_raw_ops

        device_type = self.state.registry_device_type
        try:
            answer = self.answer(selected_raw_ops(self.state.op), tuple(self.state.dtypes), device_type)
        except Exception as exc:
            self.show_cells([], "", [])
            self.notes.value = message_html(f"No release history for this selection: {exc}", "warning")
            return
        notes = [f"No shipped TensorFlow release has the raw op {raw}." for raw, _ in answer.unknown]
        if answer.not_shown:
            notes.append(f"{answer.not_shown} more raw op × dtype cells not shown.")
        shipped = answer.releases
        summary = (
            f"History across TensorFlow releases ({device_type}), from the registries shipped with "
            f"explorer: {len(shipped)} releases, {shipped[0]} to {shipped[-1]}. Press a release "
            "for its details."
        )
        self.show_cells(list(answer.cells), summary, notes)

    # ------------------------------------------------------------------ drawing

    def _slot(self, k: int) -> tuple[widgets.HTML, widgets.ToggleButtons, widgets.HTML]:
        while len(self._slots) <= k:
            n = len(self._slots)
            chips = widgets.ToggleButtons(options=[], value=None, style={"button_width": "auto"})
            chips.add_class("px-chips").add_class(f"px-chips-{n}")
            chips.observe(lambda change, n=n: self._pressed(n, change), names="value")
            title = widgets.HTML("").add_class("px-history-title")
            note = widgets.HTML("").add_class("px-history-note")
            self._slots.append((title, chips, note))
        return self._slots[k]

    def show_cells(self, cells: list[CellHistory], summary: str, notes: list[str]) -> None:
        """Put ``cells`` in the slots (their chips un-pressed), ``summary`` above, ``notes`` below."""
        from explorer.plots.history import changed_indices

        self._updating = True
        try:
            self.cells = cells
            children: list[widgets.Widget] = []
            for k, cell in enumerate(cells):
                title, chips, note = self._slot(k)
                entries = list(cell.history)
                changed = set(changed_indices(entries))
                before = {i: entries[i - 1].status for i in changed}
                chips.value = None
                chips.options = [
                    (chip_label(e.version, e.status, i in changed), e.version) for i, e in enumerate(entries)
                ]
                chips.value = None
                chips.tooltips = [
                    chip_tooltip(e.version, e.status, e.reason, before.get(i)) for i, e in enumerate(entries)
                ]
                style = chips_css(k, [e.status for e in entries], [i in changed for i in range(len(entries))])
                title.value = f"<b>{html.escape(cell.title)}</b><style>{style}</style>"
                note.value = f"<div style='font-size:80%;color:#333'>{_note_html(entries, changed)}</div>"
                children += [title, chips, note]
            self.strips.children = tuple(children)
            self.head.value = f"<div style='font-size:90%'>{html.escape(summary)}</div>" if summary else ""
            self.notes.value = "".join(f"<p style='font-size:85%'>{html.escape(n)}</p>" for n in notes)
        finally:
            self._updating = False

    # ------------------------------------------------------------------ events

    def press(self, slot: int, version: str) -> None:
        """What pressing the chip of ``version`` in slot ``slot`` does (a click, Enter or Space)."""
        self._slot(slot)[1].value = version

    def _pressed(self, slot: int, change: dict[str, Any]) -> None:
        if self._updating or change["new"] is None or slot >= len(self.cells):
            return
        self._updating = True
        try:  # one pressed chip at a time, over every strip
            for k, (_, chips, _) in enumerate(self._slots):
                if k != slot:
                    chips.value = None
        finally:
            self._updating = False
        cell = self.cells[slot]
        entry = next(e for e in cell.history if e.version == change["new"])
        self.on_pick(cell, entry)

    def release(self) -> None:
        """Un-press every chip (the details panel shows something else now)."""
        self._updating = True
        try:
            for _, chips, _ in self._slots:
                chips.value = None
        finally:
            self._updating = False


def _note_html(entries: list[Any], changed: set[int]) -> str:
    """Where the strip changed, or that it never did (escaped)."""
    esc = html.escape
    if not entries:
        return "no shipped release"
    if not changed:
        return f"the same in all {len(entries)} releases ({esc(entries[0].status)})"
    return "changed in " + ", ".join(
        f"{esc(entries[i].version)} ({esc(entries[i - 1].status)} &#8594; {esc(entries[i].status)})"
        for i in sorted(changed)
    )
