"""``explorer.App()``: the controls, the tabs, and what TensorFlow work runs where.

Building the app imports no TensorFlow.  The registry views come from the data shipped for the
installed release; TensorFlow's sweep results (Ranges, Accuracy) and its device list
(Environment) come from disk caches or sandboxed worker processes; probes run in workers.
The in-process loader (``app.ctx.tf_loader``) starts only when a shown tab cannot work
without TensorFlow in the kernel, or when asked (training, ``app.ctx.tf_loader.start()``).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import ipywidgets as widgets

from explorer.app.context import AppContext
from explorer.app.controls import Controls
from explorer.app.first_view import PREVIEW_CSS, PREVIEW_METADATA
from explorer.app.loader import BackgroundLoader
from explorer.app.render import message_html
from explorer.app.state import AppState
from explorer.app.tab import Tab


def _tab_classes() -> list[type[Tab]]:
    from explorer.app.accuracy_tab import AccuracyTab
    from explorer.app.bits_tab import BitsTab
    from explorer.app.blocks_tab import BlocksTab
    from explorer.app.environment_tab import EnvironmentTab
    from explorer.app.explain_tab import ExplainTab
    from explorer.app.kernels_tab import KernelsTab
    from explorer.app.model_tab import ModelTab
    from explorer.app.ranges_tab import RangesTab
    from explorer.app.training_tab import TrainingTab

    return [
        KernelsTab,
        RangesTab,
        AccuracyTab,
        BitsTab,
        BlocksTab,
        TrainingTab,
        EnvironmentTab,
        ExplainTab,
        ModelTab,
    ]


class TabSet(Mapping[str, Tab]):
    """The app's tabs by key, each built (its widgets created) on first access.

    Until then the ipywidgets Tab holds an empty slot box for it; ``tabs[key]`` (and
    ``App.tab``, ``App.select``, selecting it on screen) builds the tab and puts its widget in
    the slot.  ``key in tabs``, ``len`` and iterating the keys build nothing;
    :meth:`built` lists the tabs built so far.
    """

    def __init__(self, app: App, classes: list[type[Tab]]) -> None:
        self._app = app
        self._classes = {cls.key: cls for cls in classes}
        self._built: dict[str, Tab] = {}
        self._lock = threading.RLock()
        #: one empty box per tab, in order: the ipywidgets Tab's children
        self.slots: dict[str, widgets.Box] = {
            key: widgets.Box(layout=widgets.Layout(display="block")).add_class("px-tab-slot")
            for key in self._classes
        }

    def __getitem__(self, key: str) -> Tab:
        tab = self._built.get(key)
        if tab is not None:
            return tab
        cls = self._classes[key]  # KeyError for an unknown key, as a dict
        with self._lock:
            if key not in self._built:
                self._built[key] = self._build(cls)
            return self._built[key]

    def _build(self, cls: type[Tab]) -> Tab:
        app = self._app
        tab = cls(app.ctx)
        if not tab.needs_tensorflow:
            tab.on_registry_ready(app)
        if app.ctx.tf_loader.status == "ready":
            try:
                tab.on_tensorflow_loaded(app)
            except Exception as exc:
                tab.show_error(exc, "after TensorFlow loaded")
        self.slots[cls.key].children = (tab.widget,)
        return tab

    def __contains__(self, key: object) -> bool:
        return key in self._classes

    def __iter__(self) -> Iterator[str]:
        return iter(self._classes)

    def __len__(self) -> int:
        return len(self._classes)

    def classes(self) -> list[type[Tab]]:
        """The tab classes, in tab order (their titles, keys and fields need no build)."""
        return list(self._classes.values())

    def built(self) -> list[Tab]:
        """The tabs built so far, in tab order."""
        return [self._built[key] for key in self._classes if key in self._built]

    def is_built(self, key: str) -> bool:
        """Whether the tab ``key`` has been built."""
        return key in self._built


def _reacts_to_registry(cls: type[Tab]) -> bool:
    """Whether ``cls`` does something once the registry is ready (it is then built at start)."""
    return not cls.needs_tensorflow and cls.on_registry_ready is not Tab.on_registry_ready


class App:
    """The Precision Explorer app: ``explorer.App()`` as the last line of a cell shows it.

    ``App(op="exp", dtypes=["float16"], tab="ranges")`` starts with that selection.
    TensorFlow is not imported at build; ``load_tensorflow=True`` (the default) lets a shown
    tab that needs it in this kernel start the background import, ``False`` never does (such
    a tab then says TensorFlow is not loaded).
    The selection lives in ``app.state`` (an :class:`~explorer.app.state.AppState`);
    widgets are in ``app.controls``; tabs in ``app.tabs`` by key
    (kernels, ranges, accuracy, bits, training, environment, explain, model).
    ``App(model=m, example_inputs=x)`` (a Keras model, ``torch.nn.Module`` or JAX function)
    opens on the Your model tab, which checks it.  A tab's widgets are
    built when it is first shown or accessed (``app.tabs[key]``, ``app.tab(key)``): see
    :class:`TabSet`.
    """

    def __init__(
        self,
        *,
        tab: str | None = None,
        load_tensorflow: bool = True,
        tf_loader: BackgroundLoader | None = None,
        model: Any = None,
        example_inputs: Any = None,
        **selection: Any,
    ) -> None:
        start = time.perf_counter()
        tab = tab or ("model" if model is not None else "kernels")
        #: whether a shown tab that needs TensorFlow in this kernel may start its import
        self.load_tensorflow = load_tensorflow
        self.state = AppState(**selection)
        self.ctx = AppContext(self.state, tf_loader)
        if model is not None:  # the Your model tab checks it (explorer.App(model=m, example_inputs=x))
            self.ctx.user_model = (model, example_inputs)
        self.controls = Controls(self.state)
        self.tabs = TabSet(self, _tab_classes())
        if tab not in self.tabs:
            raise ValueError(f"unknown tab {tab!r}; valid tabs: {', '.join(self.tabs)}")
        self.tab_widget = widgets.Tab(
            children=list(self.tabs.slots.values()), titles=[cls.title for cls in self.tabs.classes()]
        )
        self.tab_widget.add_class("px-tabs")
        self.banner = widgets.HTML(value="").add_class("px-banner")
        self._title = title = widgets.HTML(
            "<b style='font-size:120%'>Precision Explorer</b> "
            "<span style='color:#555'>— which ops run in which dtype on which device, "
            "where formats overflow, how accurate backends are, whether mixed precision "
            "trains</span>"
        )
        from explorer.app.glossary import glossary_html
        from explorer.app.style import stylesheet

        #: the words the tabs use, explained; their uses link here
        self.glossary = widgets.HTML(glossary_html()).add_class("px-glossary-box")
        self.widget = widgets.VBox(
            [stylesheet(), title, self.banner, self.controls.widget, self.tab_widget, self.glossary]
        )
        self.widget.add_class("px-app")

        for cls in self.tabs.classes():
            if _reacts_to_registry(cls):
                self.tabs[cls.key]  # built now: it sets up what the registry gives (raw op names)
        self.state.observe(self._on_state_change)
        self.tab_widget.observe(self._on_tab_selected, names="selected_index")
        self.tab_widget.selected_index = list(self.tabs).index(tab)
        self.controls.show_fields(self.selected_tab.shown_fields())  # each tab shows only its own controls
        self.ctx.tf_loader.add_done_callback(self._on_tensorflow_loaded)
        self.ctx.background.listen(self._on_background_done)
        self._show(self.selected_tab)
        self.startup_seconds = time.perf_counter() - start

    # ------------------------------------------------------------------ display

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def _ipython_display_(self) -> None:
        """Display the preview (:meth:`preview_html`, marked with :data:`PREVIEW_METADATA`), then the app."""
        from IPython.display import HTML, display

        display(HTML(self.preview_html()), metadata={PREVIEW_METADATA: True})
        display(self.widget)

    def preview_html(self) -> str:
        """The shown tab's first view as static HTML: its HTML parts in order (for the Kernels
        tab: intro, message, history across releases, the registry table), under a line saying
        that the controls are loading.

        The Voila template of ``precision-explorer app`` writes it into the page itself, so it shows
        before the widget scripts have loaded; once the app is drawn its CSS hides the preview.
        """
        tab = self.selected_tab
        return (
            f"<div class='px-preview'><style>{PREVIEW_CSS}</style>"
            f"{self._title.value}"
            + message_html("The controls are loading: this is the app's first view, as static HTML.", "info")
            + f"<h3 class='px-preview-tab'>{tab.title}</h3>"
            + "".join(part.value for part in tab.widget.children if isinstance(part, widgets.HTML))
            + "</div>"
        )

    def __repr__(self) -> str:
        return f"<explorer.App {self.state!r}>"

    # ------------------------------------------------------------------ tabs

    @property
    def selected_tab(self) -> Tab:
        """The tab on screen."""
        index = self.tab_widget.selected_index or 0
        return self.tabs[list(self.tabs)[index]]

    def select(self, key: str) -> Tab:
        """Show the tab ``key`` (rendering it if its selection changed); returns it."""
        if key not in self.tabs:
            raise ValueError(f"unknown tab {key!r}; valid tabs: {', '.join(self.tabs)}")
        self.tab_widget.selected_index = list(self.tabs).index(key)
        return self.tabs[key]

    def tab(self, key: str) -> Tab:
        """The tab object ``key`` (kernels, ranges, accuracy, bits, training, environment, explain, model)."""
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
        if "mode" in changes:  # a control that does nothing in a mode is hidden there
            self.controls.show_fields(selected.shown_fields())
        for tab in self.tabs.built():  # a tab not built yet renders when first shown
            if set(changes) & set(tab.fields):
                tab.dirty = True
        if selected.dirty:
            self._show(selected)

    def _on_tab_selected(self, change: dict[str, Any]) -> None:
        self.controls.show_fields(self.selected_tab.shown_fields())
        if not hasattr(self, "startup_seconds"):
            return  # still building; __init__ renders the first tab itself
        tab = self.selected_tab
        if tab.dirty:
            self._show(tab)

    def _show(self, tab: Tab) -> None:
        """Render ``tab``; one that needs TensorFlow in this kernel starts its import first (when
        ``load_tensorflow``)."""
        if tab.needs_tensorflow and self.load_tensorflow and self.ctx.tf_loader.status == "idle":
            self.ctx.tf_loader.start()
        self._update_banner()
        tab.refresh()
        self._update_banner()

    def _on_background_done(self, topic: str) -> None:
        """A worker's results arrived (``topic``: ``sweeps`` or ``environment``): redraw what shows them."""
        from explorer.app.sweeps import SWEEP_TABS, SWEEP_TOPIC

        keys = SWEEP_TABS if topic == SWEEP_TOPIC else (topic,)
        for key in keys:
            if key in self.tabs and self.tabs.is_built(key):
                self.tabs[key].dirty = True
        if hasattr(self, "startup_seconds") and self.selected_tab.dirty:
            self._show(self.selected_tab)

    def _on_tensorflow_loaded(self, loader: BackgroundLoader) -> None:
        self._update_banner()
        built = self.tabs.built()  # a tab built later calls on_tensorflow_loaded when built
        for tab in built:
            if tab.needs_tensorflow:
                tab.dirty = True
        for tab in built:
            try:
                tab.on_tensorflow_loaded(self)
            except Exception as exc:
                tab.show_error(exc, "after TensorFlow loaded")
        if hasattr(self, "startup_seconds") and self.selected_tab.dirty:
            self._show(self.selected_tab)

    def _update_banner(self) -> None:
        """Say what is loaded in this kernel.  The banner shows only what a visitor waits for (the
        import while it runs, or why it failed); where results come from (TensorFlow imported here
        or not, worker processes) is an implementation note, kept for the Environment tab
        (``app.ctx.runtime_note``)."""
        loader = self.ctx.tf_loader
        waiting = [cls.title for cls in self.tabs.classes() if _needs_tensorflow(cls, self.tabs)]
        imported = "tensorflow" in sys.modules
        if loader.status == "failed":
            kind, text = "error", loader.describe()
        elif loader.status == "loading":
            kind = "loading"
            text = (
                f"{loader.describe()} (in this kernel, for {' and '.join(waiting) or 'a view that asked'})."
            )
            if waiting:
                text += f" {' and '.join(waiting)} fill in when it is ready."
        elif loader.status == "ready" or imported:
            kind = "info"
            text = (
                loader.describe() + " in this kernel."
                if loader.status == "ready"
                else ("TensorFlow is imported in this kernel.")
            )
        else:
            kind = "info"
            text = (
                "TensorFlow is not imported in this kernel"
                + (
                    ""
                    if waiting
                    else ": its kernel registry comes from the data shipped with explorer or a disk cache"
                )
                + "; probes, TensorFlow's sweep results and its device list come from sandboxed worker "
                "processes (results cached on disk)."
            )
            if waiting:
                text += (
                    f" {' and '.join(waiting)} need{'s' if len(waiting) == 1 else ''} TensorFlow in this "
                    + (
                        "kernel; it loads when shown."
                        if self.load_tensorflow
                        else "kernel and stay empty (App(load_tensorflow=False))."
                    )
                )
        changed = text != self.ctx.runtime_note
        self.ctx.runtime_note = text
        shown = text
        if kind == "loading":  # what a visitor waits for, without where it runs ("this kernel")
            after = f" {' and '.join(waiting)} fill in when it is ready." if waiting else ""
            shown = loader.describe() + after
        self.banner.value = message_html(shown, kind) if kind in ("loading", "error") else ""
        if changed and self.tabs.is_built("environment"):
            self.tabs["environment"].dirty = True


def _needs_tensorflow(cls: type[Tab], tabs: TabSet) -> bool:
    """Whether the tab of ``cls`` needs TensorFlow in this kernel: the built tab's own answer
    (the Kernels tab does not when the registry is at hand), else its class's."""
    key = cls.key
    if tabs.is_built(key):
        return bool(tabs[key].needs_tensorflow)
    if key == "kernels":
        from explorer.runtime.registry import available_without_tensorflow

        return not available_without_tensorflow()
    return bool(cls.needs_tensorflow)
