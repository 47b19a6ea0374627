"""``explorer.App()``: the controls, the tabs and the background TensorFlow loader."""

from __future__ import annotations

import time
from typing import Any

import ipywidgets as widgets

from explorer.app.context import AppContext
from explorer.app.controls import Controls
from explorer.app.loader import BackgroundLoader
from explorer.app.render import message_html
from explorer.app.state import AppState
from explorer.app.tab import Tab


def _tab_classes() -> list[type[Tab]]:
    from explorer.app.accuracy_tab import AccuracyTab
    from explorer.app.bits_tab import BitsTab
    from explorer.app.environment_tab import EnvironmentTab
    from explorer.app.explain_tab import ExplainTab
    from explorer.app.kernels_tab import KernelsTab
    from explorer.app.ranges_tab import RangesTab
    from explorer.app.training_tab import TrainingTab

    return [KernelsTab, RangesTab, AccuracyTab, BitsTab, TrainingTab, EnvironmentTab, ExplainTab]


class App:
    """The Precision Explorer app: ``explorer.App()`` as the last line of a cell shows it.

    ``App(op="exp", dtypes=["float16"], tab="ranges")`` starts with that selection.
    ``load_tensorflow=False`` skips the background TensorFlow import (tests).
    The selection lives in ``app.state`` (an :class:`~explorer.app.state.AppState`);
    widgets are in ``app.controls``; tabs in ``app.tabs`` by key
    (kernels, ranges, accuracy, bits, training, environment, explain).
    """

    def __init__(
        self,
        *,
        tab: str = "kernels",
        load_tensorflow: bool = True,
        tf_loader: BackgroundLoader | None = None,
        **selection: Any,
    ) -> None:
        start = time.perf_counter()
        self.state = AppState(**selection)
        self.ctx = AppContext(self.state, tf_loader)
        self.controls = Controls(self.state)
        self.tabs: dict[str, Tab] = {}
        for cls in _tab_classes():
            self.tabs[cls.key] = cls(self.ctx)
        if tab not in self.tabs:
            raise ValueError(f"unknown tab {tab!r}; valid tabs: {', '.join(self.tabs)}")
        self.tab_widget = widgets.Tab(
            children=[t.widget for t in self.tabs.values()], titles=[t.title for t in self.tabs.values()]
        )
        self.tab_widget.add_class("px-tabs")
        self.banner = widgets.HTML(value="").add_class("px-banner")
        title = widgets.HTML(
            "<b style='font-size:120%'>Precision Explorer</b> "
            "<span style='color:#555'>— which ops run in which dtype on which device, "
            "where formats overflow, how accurate backends are, whether mixed precision "
            "trains</span>"
        )
        self.widget = widgets.VBox([title, self.banner, self.controls.widget, self.tab_widget])
        self.widget.add_class("px-app")

        for t in self.tabs.values():
            if not t.needs_tensorflow:
                t.on_registry_ready(self)
        self.state.observe(self._on_state_change)
        self.tab_widget.observe(self._on_tab_selected, names="selected_index")
        self.tab_widget.selected_index = list(self.tabs).index(tab)
        self._update_banner()
        self.ctx.tf_loader.add_done_callback(self._on_tensorflow_loaded)
        if load_tensorflow:
            self.ctx.tf_loader.start()
        self._update_banner()
        self.selected_tab.refresh()
        self.startup_seconds = time.perf_counter() - start

    # ------------------------------------------------------------------ display

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return f"<explorer.App {self.state!r}>"

    # ------------------------------------------------------------------ tabs

    @property
    def selected_tab(self) -> Tab:
        """The tab on screen."""
        index = self.tab_widget.selected_index or 0
        return list(self.tabs.values())[index]

    def select(self, key: str) -> Tab:
        """Show the tab ``key`` (rendering it if its selection changed); returns it."""
        if key not in self.tabs:
            raise ValueError(f"unknown tab {key!r}; valid tabs: {', '.join(self.tabs)}")
        self.tab_widget.selected_index = list(self.tabs).index(key)
        return self.tabs[key]

    def tab(self, key: str) -> Tab:
        """The tab object ``key`` (kernels, ranges, accuracy, bits, training, environment, explain)."""
        if key not in self.tabs:
            raise ValueError(f"unknown tab {key!r}; valid tabs: {', '.join(self.tabs)}")
        return self.tabs[key]

    def export(self, key: str, path: str) -> str:
        """Save the figure of tab ``key`` to ``path`` (.png or .svg); returns the path."""
        fmt = str(path).rsplit(".", 1)[-1].lower()
        if fmt not in ("png", "svg"):
            raise ValueError(f"export path must end in .png or .svg, got {path!r}")
        tab = self.tab(key)
        if tab.dirty:
            tab.refresh()
        with open(path, "wb") as fh:
            fh.write(tab.export(fmt))
        return str(path)

    def load_snapshot(self, path: str) -> None:
        """Show a kernel snapshot saved on another machine in the Kernels tab."""
        from explorer.app.kernels_tab import KernelsTab

        kernels = self.tabs["kernels"]
        assert isinstance(kernels, KernelsTab)
        kernels.load_snapshot_file(path)

    # ------------------------------------------------------------------ reactions

    def _on_state_change(self, changes: dict[str, Any]) -> None:
        selected = self.selected_tab
        for tab in self.tabs.values():
            if set(changes) & set(tab.fields):
                tab.dirty = True
        if selected.dirty:
            selected.refresh()

    def _on_tab_selected(self, change: dict[str, Any]) -> None:
        if not hasattr(self, "startup_seconds"):
            return  # still building; __init__ renders the first tab itself
        tab = self.selected_tab
        if tab.dirty:
            tab.refresh()

    def _on_tensorflow_loaded(self, loader: BackgroundLoader) -> None:
        self._update_banner()
        for tab in self.tabs.values():
            if tab.needs_tensorflow:
                tab.dirty = True
        for tab in self.tabs.values():
            try:
                tab.on_tensorflow_loaded(self)
            except Exception as exc:
                tab.show_error(exc, "after TensorFlow loaded")
        if hasattr(self, "startup_seconds") and self.selected_tab.dirty:
            self.selected_tab.refresh()

    def _update_banner(self) -> None:
        loader = self.ctx.tf_loader
        kind = {"loading": "loading", "failed": "error", "ready": "info"}.get(loader.status, "info")
        text = loader.describe()
        if loader.status == "loading":
            waiting = [t.title for t in self.tabs.values() if t.needs_tensorflow]
            ready = [t.title for t in self.tabs.values() if not t.needs_tensorflow]
            if waiting:
                text += f" {', '.join(ready)} work already; {' and '.join(waiting)} fill in when it is ready."
        elif loader.status == "idle":
            text = "TensorFlow is not loaded (App(load_tensorflow=False)); TensorFlow views stay empty."
        self.banner.value = message_html(text, kind)
