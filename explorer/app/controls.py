"""The selection controls: widgets that write to the state and follow it.

Each widget has a stable CSS class (``px-op``, ``px-dtypes``...) for browser tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import ipywidgets as widgets

from explorer.analysis.availability import AVAILABILITY_MODES
from explorer.app.state import AppState
from explorer.backends import BACKEND_NAMES, DEVICE_TYPES
from explorer.formats import FORMAT_NAMES
from explorer.ops import catalog

#: Longest list of ops the op dropdown shows at once (search narrows it).
MAX_OP_OPTIONS = 400


def _catalog_options() -> list[tuple[str, str]]:
    return [(f"{name}  ·  {op.group}", name) for name, op in catalog().items()]


class Controls:
    """Op search + op, dtypes, device, backends, mode; two-way bound to an :class:`AppState`."""

    def __init__(self, state: AppState) -> None:
        self.state = state
        self._syncing = False
        self._raw_ops: tuple[str, ...] = ()
        lay = widgets.Layout
        self.op_search = widgets.Text(
            value="",
            placeholder="search ops (catalog and TF raw ops)",
            description="Find op",
            continuous_update=True,
            layout=lay(width="300px"),
        )
        self.op_search.add_class("px-op-search")
        self.op = widgets.Dropdown(
            options=self._op_options(""), value=state.op, description="Op", layout=lay(width="300px")
        )
        self.op.add_class("px-op")
        self.dtypes = widgets.SelectMultiple(
            options=list(FORMAT_NAMES),
            value=state.dtypes,
            description="Dtypes",
            rows=6,
            layout=lay(width="260px"),
        )
        self.dtypes.add_class("px-dtypes")
        self.device = widgets.ToggleButtons(
            options=list(DEVICE_TYPES),
            value=state.device,
            description="Device",
            style={"button_width": "60px"},
        )
        self.device.add_class("px-device")
        self.backends = widgets.SelectMultiple(
            options=list(BACKEND_NAMES),
            value=state.backends,
            description="Backends",
            rows=4,
            layout=lay(width="250px"),
        )
        self.backends.add_class("px-backends")
        self.mode = widgets.Dropdown(
            options=list(AVAILABILITY_MODES), value=state.mode, description="Mode", layout=lay(width="200px")
        )
        self.mode.add_class("px-mode")
        self.message = widgets.HTML(value="").add_class("px-controls-message")

        self.op_search.observe(self._on_search, names="value")
        self.op.observe(lambda ch: self._write(op=ch["new"]), names="value")
        self.dtypes.observe(lambda ch: self._write(dtypes=ch["new"]), names="value")
        self.device.observe(lambda ch: self._write(device=ch["new"]), names="value")
        self.backends.observe(lambda ch: self._write(backends=ch["new"]), names="value")
        self.mode.observe(lambda ch: self._write(mode=ch["new"]), names="value")
        state.observe(self._follow, names=("op", "dtypes", "device", "backends", "mode"))

        left = widgets.VBox([self.op_search, self.op, self.device, self.mode])
        self.widget = widgets.VBox([widgets.HBox([left, self.dtypes, self.backends]), self.message])
        self.widget.add_class("px-controls")

    # ------------------------------------------------------------------ ops

    def set_raw_ops(self, names: Iterable[str]) -> None:
        """Offer TensorFlow raw ops (all registered ops) next to the catalog."""
        self._raw_ops = tuple(sorted(set(names)))
        self._on_search({"new": self.op_search.value})

    def _op_options(self, query: str) -> list[tuple[str, str]]:
        query = query.strip().lower()
        options = [o for o in _catalog_options() if query in o[0].lower()]
        names = {v for _, v in options}
        if query:
            raw = [(f"{r}  ·  TF raw op", r) for r in self._raw_ops_matching(query) if r not in names]
            options += raw
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
        return [r for r in getattr(self, "_raw_ops", ()) if query in r.lower()]

    def _on_search(self, change: dict[str, Any]) -> None:
        options = self._op_options(change["new"])
        self._syncing = True
        try:
            self.op.options = options
            self.op.value = self.state.op
        finally:
            self._syncing = False
        matches = len(options)
        self.message.value = f"<span style='color:#555'>{matches} ops match</span>" if change["new"] else ""

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
