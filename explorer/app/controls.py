"""The selection controls: widgets that write to the state and follow it.

Each widget has a stable CSS class (``px-op``, ``px-dtypes``...) for browser tests.  Dtypes
and backends are toggle buttons (one click each, no modifier key; every format visible, the
selected ones highlighted), grouped by width.  Only the controls of the fields the selected
tab depends on are shown (:meth:`Controls.show_fields`).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

import ipywidgets as widgets
import traitlets

from explorer.analysis.availability_rows import AVAILABILITY_MODES
from explorer.app.state import AppState
from explorer.backends import BACKEND_NAMES, DEVICE_TYPES
from explorer.formats import FORMAT_NAMES, resolve
from explorer.ops import catalog

#: Longest list of ops the op dropdown shows at once (search narrows it).
MAX_OP_OPTIONS = 400


def _catalog_options() -> list[tuple[str, str]]:
    return [(f"{name}  ·  {op.group}", name) for name, op in catalog().items()]


def format_families(names: Sequence[str] = FORMAT_NAMES) -> list[tuple[str, list[str]]]:
    """The formats grouped by storage width, widest first: ``[("32/64-bit", [...]), ...]``.

    >>> [label for label, _ in format_families()]
    ['32/64-bit', '16-bit', '8-bit', '6/4-bit']
    """
    groups: dict[str, list[str]] = {}
    for name in names:
        bits = resolve(name).bits
        label = "32/64-bit" if bits > 16 else "16-bit" if bits == 16 else "8-bit" if bits == 8 else "6/4-bit"
        groups.setdefault(label, []).append(name)
    return list(groups.items())


class ToggleGroup(widgets.VBox):
    """A multi-select of toggle buttons: a click selects or deselects one option, no modifier
    key; ``value`` is the tuple of selected options (in the order they were selected).
    Each button has the CSS class ``{item_class}-{option}``; the selected ones ``mod-active``.
    """

    value = traitlets.Tuple()

    def __init__(
        self,
        groups: Sequence[tuple[str, Sequence[str]]],
        value: Iterable[str],
        description: str,
        item_class: str,
    ) -> None:
        self.buttons: dict[str, widgets.ToggleButton] = {}
        self._updating = False
        rows = []
        for label, options in groups:
            row: list[widgets.Widget] = []
            if label:
                row.append(widgets.HTML(f"<span class='px-toggle-label'>{label}</span>"))
            for option in options:
                button = widgets.ToggleButton(
                    value=False, description=option, tooltip=f"select or deselect {option}"
                )
                button.add_class("px-toggle").add_class(f"{item_class}-{option}")
                button.observe(self._on_button, names="value")
                self.buttons[option] = button
                row.append(button)
            rows.append(widgets.HBox(row).add_class("px-toggle-row"))
        title = widgets.HTML(f"<b class='px-toggle-title'>{description}</b>")
        super().__init__([title, *rows])
        self.add_class("px-toggle-group")
        self.value = tuple(value)

    @property
    def options(self) -> tuple[str, ...]:
        """Every option, in display order."""
        return tuple(self.buttons)

    @traitlets.validate("value")
    def _check(self, proposal: dict[str, Any]) -> tuple[str, ...]:
        chosen = tuple(dict.fromkeys(proposal["value"]))
        unknown = [c for c in chosen if c not in self.buttons]
        if unknown:
            raise traitlets.TraitError(f"unknown option(s) {unknown}; options: {', '.join(self.buttons)}")
        return chosen

    @traitlets.observe("value")
    def _show_value(self, change: dict[str, Any]) -> None:
        self._updating = True
        try:
            for option, button in self.buttons.items():
                button.value = option in change["new"]
        finally:
            self._updating = False

    def _on_button(self, change: dict[str, Any]) -> None:
        if self._updating:
            return
        option = change["owner"].description
        if change["new"]:
            self.value = (*self.value, option)
        else:
            self.value = tuple(v for v in self.value if v != option)


class Controls:
    """Op search + op, dtypes, device, backends, mode; two-way bound to an :class:`AppState`."""

    def __init__(self, state: AppState) -> None:
        self.state = state
        self._syncing = False
        self._raw_ops: tuple[str, ...] = ()
        lay = widgets.Layout
        self.op_search = widgets.Text(
            value="",
            placeholder="type to narrow; Enter picks the top match",
            description="Find op",
            continuous_update=True,
            layout=lay(width="320px"),
        )
        self.op_search.add_class("px-op-search")
        self.op = widgets.Dropdown(
            options=self._op_options(""), value=state.op, description="Op", layout=lay(width="320px")
        )
        self.op.add_class("px-op")
        self.dtypes = ToggleGroup(format_families(), state.dtypes, "Dtypes", "px-dtype")
        self.dtypes.add_class("px-dtypes")
        self.device = widgets.ToggleButtons(
            options=list(DEVICE_TYPES), value=state.device, description="Device"
        )
        self.device.add_class("px-device")
        self.backends = ToggleGroup([("", list(BACKEND_NAMES))], state.backends, "Backends", "px-backend")
        self.backends.add_class("px-backends")
        self.mode = widgets.Dropdown(
            options=list(AVAILABILITY_MODES), value=state.mode, description="Mode", layout=lay(width="200px")
        )
        self.mode.add_class("px-mode")
        from explorer.app.glossary import anchor

        #: the modes' names are not links in a dropdown: each is one here, next to it; one Tab stop
        #: (the first): the glossary lists the other modes right after it
        later = " tabindex=-1"
        modes = [("registry", "registry", ""), ("eager", "eager", later), ("XLA", "xla", later)]
        modes.append(("compile", "compile", later))
        self.mode_help = widgets.HTML(
            "<span class='px-mode-help'>what the modes mean: "
            + " · ".join(
                f"<a class='px-term' href='#{anchor(t)}'{order}>{label}</a>" for t, label, order in modes
            )
            + "</span>"
        ).add_class("px-mode-help-box")
        self.message = widgets.HTML(value="").add_class("px-controls-message")
        self.none_note = widgets.HTML(
            "<span class='px-controls-none'>This tab has its own controls below.</span>",
            layout=lay(display="none"),
        )

        self.op_search.observe(self._on_search, names="value")
        self.op_search.on_msg(self._on_search_message)
        self.op.observe(self._on_op_picked, names="value")
        self.dtypes.observe(lambda ch: self._write(dtypes=ch["new"]), names="value")
        self.device.observe(lambda ch: self._write(device=ch["new"]), names="value")
        self.backends.observe(lambda ch: self._write(backends=ch["new"]), names="value")
        self.mode.observe(lambda ch: self._write(mode=ch["new"]), names="value")
        state.observe(self._follow, names=("op", "dtypes", "device", "backends", "mode"))

        self.op_row = widgets.HBox([self.op_search, self.op]).add_class("px-controls-row")
        #: the widgets that set each state field
        self.by_field: dict[str, list[widgets.Widget]] = {
            "op": [self.op_search, self.op],
            "dtypes": [self.dtypes],
            "device": [self.device],
            "backends": [self.backends],
            "mode": [self.mode, self.mode_help],
        }
        settings = widgets.HBox([self.device, self.mode, self.mode_help]).add_class("px-controls-row")
        self._rows = [(self.op_row, ("op",)), (settings, ("device", "mode"))]
        self.widget = widgets.VBox(
            [self.op_row, self.dtypes, self.backends, settings, self.none_note, self.message]
        )
        self.widget.add_class("px-controls")

    # ------------------------------------------------------------------ which controls

    def show_fields(self, fields: Iterable[str]) -> None:
        """Show only the controls of ``fields`` (the selected tab's); the others are hidden."""
        wanted = set(fields)
        for field, members in self.by_field.items():
            for member in members:
                member.layout.display = None if field in wanted else "none"
        for row, row_fields in self._rows:
            row.layout.display = None if wanted & set(row_fields) else "none"
        self.none_note.layout.display = None if not wanted & set(self.by_field) else "none"
        self.message.value = ""  # it was about the controls of the tab shown before

    def visible_fields(self) -> tuple[str, ...]:
        """The fields whose controls are shown now."""
        return tuple(
            f for f, members in self.by_field.items() if all(m.layout.display != "none" for m in members)
        )

    # ------------------------------------------------------------------ ops

    def set_raw_ops(self, names: Iterable[str]) -> None:
        """Offer TensorFlow raw ops (all registered ops) next to the catalog."""
        self._raw_ops = tuple(sorted(set(names)))
        self._on_search({"new": self.op_search.value})

    def _matches(self, query: str) -> list[tuple[str, str]]:
        query = query.strip().lower()
        options = [o for o in _catalog_options() if query in o[0].lower()]
        names = {v for _, v in options}
        if query:
            options += [(f"{r}  ·  TF raw op", r) for r in self._raw_ops_matching(query) if r not in names]
        return options

    def _op_options(self, query: str) -> list[tuple[str, str]]:
        options = self._matches(query)
        current = self.state.op
        if current not in {v for _, v in options}:
            label = (
                f"{current}  ·  {catalog()[current].group}"
                if current in catalog()
                else f"{current}  ·  TF raw op"
            )
            options.insert(0, (label, current))
        return options[:MAX_OP_OPTIONS]

    def _raw_ops_matching(self, query: str) -> list[str]:
        """Raw ops whose name holds ``query``; TensorFlow's internal ones (``_MklTanhGrad``) are
        not offered."""
        return [r for r in getattr(self, "_raw_ops", ()) if query in r.lower() and not r.startswith("_")]

    def best_match(self, query: str) -> str | None:
        """The op a search picks: the op named exactly ``query`` (any case), else the first match."""
        matches = [v for _, v in self._matches(query)]
        if not query.strip() or not matches:
            return None
        exact = [m for m in matches if m.lower() == query.strip().lower()]
        return exact[0] if exact else matches[0]

    def _on_search(self, change: dict[str, Any]) -> None:
        query = change["new"]
        matches = self._matches(query) if query.strip() else []
        # the op named exactly, or the only match, is selected at once; Enter picks the top one
        exact = [v for _, v in matches if v.lower() == query.strip().lower()]
        chosen = bool(exact or len(matches) == 1)
        if chosen:
            self._write(op=(exact or [matches[0][1]])[0])
        # the Op list is narrowed only while the search has not chosen: it never stays trapped
        options = self._op_options("" if chosen else query)
        self._syncing = True
        try:
            self.op.options = options
            self.op.value = self.state.op
        finally:
            self._syncing = False
        if query.strip():
            picked = (
                f"selected: {self.state.op}; the Op list shows every op again"
                if chosen
                else "Enter selects the top one"
            )
            shown = "" if len(matches) <= MAX_OP_OPTIONS else f" (first {MAX_OP_OPTIONS} listed)"
            self.message.value = (
                f"<span style='color:#555'>{len(matches)} ops match{shown}; {html.escape(picked)}</span>"
                if matches
                else "<span style='color:#8a5a00'>no op matches</span>"
            )
        else:
            self.message.value = ""

    def _on_search_message(self, _: Any, content: dict[str, Any], buffers: Any) -> None:
        if isinstance(content, dict) and content.get("event") == "submit":
            self.submit_search()

    def submit_search(self) -> None:
        """What Enter in the search box does: select the top match."""
        best = self.best_match(self.op_search.value)
        if best is not None and best != self.state.op:
            self._write(op=best)
        if best is not None:
            self._show_every_op()

    def _show_every_op(self) -> None:
        """The Op list back to every op (the search has chosen)."""
        self._syncing = True
        try:
            self.op.options = self._op_options("")
            self.op.value = self.state.op
        finally:
            self._syncing = False

    def _on_op_picked(self, change: dict[str, Any]) -> None:
        """An op picked in the Op list: selected, and the list shows every op again."""
        if self._syncing:
            return
        self._write(op=change["new"])
        if self.op_search.value and self.state.op == change["new"]:
            self._show_every_op()

    # ------------------------------------------------------------------ binding

    def _write(self, **fields: Any) -> None:
        if self._syncing:
            return
        try:
            self.state.set(**fields)
            self.message.value = ""
        except (ValueError, TypeError) as exc:
            from explorer.app.render import message_html

            self.message.value = message_html(str(exc).splitlines()[0], "warning")
            self._follow({})  # put the widgets back to the state

    def _follow(self, changes: dict[str, Any]) -> None:
        self._syncing = True
        try:
            st = self.state
            if self.op.value != st.op:
                if st.op not in {v for _, v in self.op.options}:
                    self.op.options = self._op_options(self.op_search.value)
                self.op.value = st.op
            if tuple(self.dtypes.value) != st.dtypes:
                self.dtypes.value = st.dtypes
            if self.device.value != st.device:
                self.device.value = st.device
            if tuple(self.backends.value) != st.backends:
                self.backends.value = st.backends
            if self.mode.value != st.mode:
                self.mode.value = st.mode
        finally:
            self._syncing = False
