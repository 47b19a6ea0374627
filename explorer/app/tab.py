"""What every tab shares: a status line, a plot, a details area, figure export, error display."""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from explorer.app import render
from explorer.app.jobs import Job

if TYPE_CHECKING:
    from explorer.app.context import AppContext


#: Most dtypes a side-by-side tab (Ranges, Accuracy) shows at once; more are named in a note.
MAX_PANELS = 4
#: seconds a render of a new selection may take before the tab removes the earlier selection's
#: results and says what it computes (then once a second, with the time so far)
COMPUTING_NOTE_AFTER_S = 0.3


@dataclass(frozen=True)
class Panel:
    """One dtype's part of a side-by-side view: a heading, a figure (drawn once per ``key``) and
    the dtype's own details (HTML, already escaped)."""

    dtype: str
    #: everything the figure depends on (the figure cache key)
    key: Hashable
    #: draws the figure (a matplotlib Figure or Axes)
    build: Callable[[], Any]
    #: the heading, as HTML (escaped)
    heading: str = ""
    #: the dtype's details below its figure, as HTML (escaped)
    details: str = ""


def shown_dtypes(dtypes: tuple[str, ...], limit: int = MAX_PANELS) -> tuple[tuple[str, ...], str]:
    """The dtypes a side-by-side view shows (the first ``limit``), and a note naming the others
    ("" when all are shown).

    >>> shown_dtypes(("float16", "bfloat16"))
    (('float16', 'bfloat16'), '')
    >>> shown_dtypes(tuple("abcdef"), 4)[1]
    'Showing the first 4 of 6 selected dtypes side by side; not shown: e, f (deselect some to see them).'
    """
    shown, rest = tuple(dtypes[:limit]), tuple(dtypes[limit:])
    if not rest:
        return shown, ""
    return shown, (
        f"Showing the first {len(shown)} of {len(dtypes)} selected dtypes side by side; not shown: "
        f"{', '.join(rest)} (deselect some to see them)."
    )


class NotAvailableYet(Exception):
    """Something the selection cannot show (yet), e.g. a raw op with nothing to probe: shown as a
    calm message, not an error."""


class Tab:
    """Base of the app's tabs.

    Subclasses set ``title``, ``key`` and ``fields`` (the state fields they depend
    on) and implement :meth:`render`, which reads the state and calls
    :meth:`show_figure`, :meth:`show_html` or :meth:`show_message`.  Errors raised
    by ``render`` are shown inside the tab as a readable message.
    """

    title = "Tab"
    key = "tab"
    fields: tuple[str, ...] = ()
    needs_tensorflow = False
    #: one line telling a newcomer what the tab answers
    intro = ""
    #: True for a tab whose render of a new selection can take seconds (a sweep): the earlier
    #: selection's results are removed at once and the note says what is computed, with progress
    clears_at_once = False

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx
        self.state = ctx.state
        self.dirty = True
        self.render_count = 0
        self.last_render_seconds: float | None = None
        self._figure: Any = None
        #: the figure of each dtype a side-by-side view shows (empty for a single figure)
        self._figures: dict[str, Any] = {}
        self._render_lock = threading.RLock()
        self._message_shown = False
        self._answer_shown = False
        #: what the shown results are about (the state's values of ``fields``), None before any
        self.shown_selection: tuple[Any, ...] | None = None
        #: counts writes of results; the computing note clears only what no render of the new
        #: selection has written yet
        self._writes = 0
        self._write_lock = threading.Lock()
        self._status_by_render: str | None = None
        #: the selection the render in progress is about (see :meth:`still_current`)
        self._rendering: tuple[Any, ...] | None = None
        #: what the render in progress has done so far, for the computing note ("float16 done")
        self.progress = ""

        #: one sentence (or one per selected dtype) answering the selection in words, above all else
        self.answer = widgets.HTML(value="").add_class("px-answer").add_class(f"px-{self.key}-answer")
        self.status = widgets.HTML(value="").add_class("px-status").add_class(f"px-{self.key}-status")
        self.plot = widgets.Output().add_class("px-plot").add_class(f"px-{self.key}-plot")
        # an HTML widget, not an Output: replacing an Output's content makes JupyterLab's output
        # area measure the page (a forced layout) before it clears, on every redraw
        self.details = widgets.HTML("").add_class("px-details").add_class(f"px-{self.key}-details")
        self.export_png = widgets.Button(
            description="PNG", tooltip="export the figure as PNG", layout=widgets.Layout(width="70px")
        )
        self.export_svg = widgets.Button(
            description="SVG", tooltip="export the figure as SVG", layout=widgets.Layout(width="70px")
        )
        self.export_png.add_class("px-export-png").add_class(f"px-{self.key}-export-png")
        self.export_svg.add_class("px-export-svg").add_class(f"px-{self.key}-export-svg")
        self.export_link = widgets.HTML(value="").add_class("px-export-link")
        self.export_png.on_click(lambda _: self._export("png"))
        self.export_svg.on_click(lambda _: self._export("svg"))
        self.export_bar = widgets.HBox(
            [widgets.Label("Export figure:"), self.export_png, self.export_svg, self.export_link]
        )
        self.toolbar = widgets.HBox([])
        from explorer.app.glossary import linked

        self.intro_html = widgets.HTML(f"<div class='px-intro-text'>{linked(self.intro)}</div>")
        self.intro_html.add_class("px-intro")
        parts = [self.answer, self.intro_html, self.toolbar, self.status, self.plot, self.details]
        self.widget = widgets.VBox([*parts, self.export_bar])
        self.widget.add_class(f"px-tab-{self.key}")
        self.build()
        self.link_glossary_terms()

    # ------------------------------------------------------------------ for subclasses

    def shown_fields(self) -> tuple[str, ...]:
        """The fields whose controls this tab shows for the current selection (its ``fields``;
        a tab leaves out one that changes nothing in the selected mode)."""
        return self.fields

    def build(self) -> None:
        """Add tab-specific controls (to ``self.toolbar``); called once from __init__."""

    def render(self) -> None:
        """Draw the tab from the state."""
        raise NotImplementedError

    def on_registry_ready(self, app: Any) -> None:
        """Called once TensorFlow's kernel registry can be read without waiting for TensorFlow
        (at start when the shipped or cached registry applies)."""

    def on_tensorflow_loaded(self, app: Any) -> None:
        """Called in the loader thread once TensorFlow has loaded (tabs using it mark themselves dirty)."""

    def link_glossary_terms(self) -> None:
        """Link the glossary terms in every HTML part of the tab (its details, status, notes,
        keys and tables), now and whenever one is written: each use of a term reaches the
        glossary by keyboard, pointer or touch (:func:`explorer.app.glossary.link_terms`)."""
        from explorer.app.glossary import link_terms

        stack: list[Any] = [self.widget]
        while stack:
            widget = stack.pop()
            if isinstance(widget, widgets.HTML):
                link_terms(widget)
            stack.extend(getattr(widget, "children", ()))

    # ------------------------------------------------------------------ drawing

    def selection(self) -> tuple[Any, ...]:
        """The state's values of this tab's ``fields``: what its results are about."""
        values = self.state.as_dict()
        return tuple(values[f] for f in self.fields)

    def describe_selection(self) -> str:
        """The selection in words, for the computing note (e.g. ``exp in float16, bfloat16``)."""
        values = self.state.as_dict()
        op = values["op"] if "op" in self.fields else ""
        dtypes = ", ".join(values["dtypes"]) if "dtypes" in self.fields else ""
        return " in ".join(part for part in (op, dtypes) if part) or self.title

    def refresh(self) -> None:
        """Render now; any error becomes a message in the tab.  A render of a new selection that
        takes longer than :data:`COMPUTING_NOTE_AFTER_S` first removes the earlier selection's
        results and says what it computes, with the seconds so far."""
        with self._render_lock:
            start = time.perf_counter()
            self.dirty = False
            self._message_shown = False
            self._answer_shown = False
            selection = self.selection()
            with self._write_lock:
                writes = self._writes
            done = threading.Event()
            noted: list[bool] = []  # the computing note fired (it then wrote the status)
            self._status_by_render = None
            self._rendering = selection
            self.progress = ""
            if selection != self.shown_selection:
                if self.clears_at_once:
                    clear_for_new_selection(self, start, noted)
                start_computing_note(self, writes, done, start, noted)
            try:
                loader = self.ctx.tf_loader
                if self.needs_tensorflow and loader.status == "failed":
                    self.show_message(
                        f"The {self.title} tab needs TensorFlow, which could not be loaded.",
                        "error",
                        loader.error,
                    )
                elif self.needs_tensorflow and not self.ctx.tf_ready:
                    self.show_message(loader.describe() + " This tab fills in when it is ready.", "loading")
                    self.dirty = True
                else:
                    self.render()
                    if not self._message_shown:
                        self.clear_message()  # a message from an earlier selection must not linger
            except NotAvailableYet as exc:
                self._clear_unless_written(writes)
                self.show_message(str(exc), "info")
            except Exception as exc:
                self._clear_unless_written(writes)
                self.show_error(exc)
            finally:
                with self._write_lock:
                    done.set()
                    if noted:  # the render's own status wins over the computing note
                        self.status.value = self._status_by_render or ""
                    if "px-computing" in self.widget._dom_classes:
                        self.widget.remove_class("px-computing")  # all results appear at once
            if not self._answer_shown:
                self.answer.value = ""  # an answer about an earlier selection must not linger
            self.link_glossary_terms()  # parts a render added (a key, a note) link their terms too
            # a render that found the selection changed under it wrote nothing: nothing is shown
            self.shown_selection = selection if self.still_current() else None
            self._rendering = None
            self.render_count += 1
            self.last_render_seconds = time.perf_counter() - start

    def still_current(self) -> bool:
        """True while the state still holds the selection the render in progress is about (a
        render checks before it writes its results: results of a selection left are dropped)."""
        return self._rendering is None or self.selection() == self._rendering

    def _clear_unless_written(self, writes: int) -> None:
        """Remove the plot and details when this render wrote none (they are an earlier selection's)."""
        with self._write_lock:
            if self._writes == writes:
                self.clear_figure()
                self.details.value = ""

    def _wrote(self) -> None:
        """Count a write of results (see :meth:`refresh`)."""
        with self._write_lock:
            self._writes += 1

    def show_figure(self, fig: Any, alt: str = "") -> None:
        """Show a matplotlib Figure (or Axes) as the tab's plot."""
        fig = render.as_figure(fig)
        self._figure = fig
        self._figures = {}
        self._wrote()
        self.plot.outputs = (render.figure_bundle(fig, alt or self.title),)
        self.export_link.value = ""

    def show_cached_figure(self, key: Hashable, build: Callable[[], Any], alt: str = "") -> None:
        """Show the figure ``build()`` draws, drawn once per ``key`` (everything the figure depends on)."""

        def draw() -> tuple[Any, dict[str, Any]]:
            fig = render.as_figure(build())
            return fig, render.figure_bundle(fig, alt or self.title)

        fig, bundle = self.ctx.figures.get((self.key, key), draw)
        self._figure = fig
        self._figures = {}
        self._wrote()
        self.plot.outputs = (bundle,)
        self.export_link.value = ""

    def show_panels(self, panels: list[Panel], alt: str = "") -> None:
        """Show one panel per dtype side by side (a grid that wraps on narrow screens): its heading,
        its figure (drawn once per panel key) and its details.  Export then offers every figure."""
        if not panels:
            raise ValueError("show_panels needs at least one panel")
        figures: dict[str, Any] = {}
        cells = []
        for panel in panels:

            def draw(panel: Panel = panel) -> tuple[Any, dict[str, Any]]:
                fig = render.as_figure(panel.build())
                return fig, render.figure_bundle(fig, alt or self.title)

            fig, bundle = self.ctx.figures.get((self.key, panel.key), draw)
            figures[panel.dtype] = fig
            png = bundle["data"]["image/png"]
            name = html.escape(panel.dtype, quote=True)
            cells.append(
                f"<div class='px-panel' data-dtype='{name}'>"
                f"<div class='px-panel-heading'>{panel.heading or f'<b>{name}</b>'}</div>"
                f"{render.image_html(png, f'{alt or self.title} ({panel.dtype})')}"
                f"<div class='px-panel-details'>{panel.details}</div></div>"
            )
        self._figures = figures
        self._figure = next(iter(figures.values()))
        markup = f"<div class='px-panels'>{''.join(cells)}</div>"
        self._wrote()
        self.plot.outputs = (render.html_bundle(markup, f"{len(panels)} panels: {', '.join(figures)}"),)
        self.export_link.value = ""

    def clear_figure(self) -> None:
        """Remove the plot."""
        self._figure = None
        self._figures = {}
        self.plot.outputs = ()

    def show_html(self, markup: str) -> None:
        """Show HTML (tables, explanations) below the plot."""
        self._wrote()
        self.details.value = markup

    def show_answer(self, sentences: str | list[str]) -> None:
        """Say the answer to the selection in words, first in the tab (each sentence escaped, its
        terms linked to the glossary)."""
        from explorer.app.glossary import linked

        items = [sentences] if isinstance(sentences, str) else list(sentences)
        self._answer_shown = bool(items)
        body = "".join(f"<p class='px-answer-sentence'>{linked(text)}</p>" for text in items)
        self.answer.value = f"<div class='px-answer-box' role='status'>{body}</div>" if items else ""

    def show_message(self, text: str, kind: str = "info", detail: str = "") -> None:
        """Show a one-line message in the status area."""
        self._message_shown = True
        self._status_by_render = render.message_html(text, kind, detail)
        self.status.value = self._status_by_render

    def clear_message(self) -> None:
        """Empty the status area."""
        self._status_by_render = ""
        self.status.value = ""

    def show_error(self, exc: BaseException, context: str = "") -> None:
        """Show an exception as a readable message (full text folded under 'details')."""
        detail = str(exc) if len(str(exc).splitlines()) > 1 else ""
        self.show_message(
            render.error_message(exc, context or f"{self.title} could not be drawn"), "error", detail
        )

    @property
    def figure(self) -> Any:
        """The figure shown now (None if none)."""
        return self._figure

    @property
    def figures(self) -> dict[str, Any]:
        """The figure of each dtype shown side by side (``{}`` when the tab shows one figure)."""
        return dict(self._figures)

    def export(self, fmt: str = "png", dtype: str | None = None) -> bytes:
        """The current figure as PNG or SVG bytes (ValueError when there is none); in a
        side-by-side view, the figure of ``dtype`` (the first shown when None)."""
        figure = self._figure
        if dtype is not None:
            if dtype not in self._figures:
                shown = ", ".join(self._figures) or "none (one figure)"
                raise ValueError(f"the {self.title} tab shows no figure for {dtype!r}; shown: {shown}")
            figure = self._figures[dtype]
        if figure is None:
            raise ValueError(f"the {self.title} tab shows no figure to export yet")
        return render.figure_bytes(figure, fmt, dpi=150, tight=True)

    def _export(self, fmt: str) -> None:
        mime = "image/png" if fmt == "png" else "image/svg+xml"
        dtypes = list(self._figures) or [self.state.dtype]
        links = []
        try:
            for dtype in dtypes:
                data = self.export(fmt, dtype if self._figures else None)
                name = f"precision-explorer-{self.key}-{self.state.op}-{dtype}.{fmt}"
                links.append(render.download_link(data, name, mime))
        except Exception as exc:
            self.export_link.value = render.message_html(render.error_message(exc), "warning")
            return
        self.export_link.value = "<span class='px-download-links'>" + " ".join(links) + "</span>"

    # ------------------------------------------------------------------ jobs

    def job_panel(self) -> JobPanel:
        """A progress bar + cancel button for this tab's background jobs."""
        return JobPanel(self.key)


def computing_text(tab: Tab, seconds: float) -> str:
    """The computing note's words: what is computed, the progress so far, the seconds.

    >>> class T:
    ...     progress = "float16 done"
    ...     def describe_selection(self): return "tanh in float16, bfloat16"
    >>> computing_text(T(), 2.4)
    'Computing tanh in float16, bfloat16 … float16 done; 2 s so far.'
    """
    done = f" {tab.progress};" if tab.progress else ""
    return f"Computing {tab.describe_selection()} …{done} {seconds:.0f} s so far."


def clear_for_new_selection(tab: Tab, start: float, noted: list[bool]) -> None:
    """Remove the results of the earlier selection from ``tab`` now (its answer, figure and
    details) and say what is computed instead.  The tab is marked ``px-computing`` first (one
    message hides all three at once; :meth:`Tab.refresh` unmarks it when the render has written
    its results, so they appear together)."""
    with tab._write_lock:
        tab.widget.add_class("px-computing")
        tab.clear_figure()
        tab.details.value = ""
        tab.answer.value = ""
        noted.append(True)
        tab.status.value = render.message_html(computing_text(tab, time.perf_counter() - start), "loading")


def start_computing_note(
    tab: Tab, writes: int, done: threading.Event, start: float, noted: list[bool]
) -> None:
    """After :data:`COMPUTING_NOTE_AFTER_S`, while ``tab`` renders a new selection (until
    ``done``): clear what the render has not written yet (``tab._writes`` still ``writes``) and
    say what is computed, every second again; ``noted`` records that the note was shown."""
    what = tab.describe_selection()

    def note() -> None:
        while not done.wait(COMPUTING_NOTE_AFTER_S if tab._writes == writes else 1.0):
            with tab._write_lock:
                if done.is_set():
                    return
                if tab._writes == writes:  # nothing of the new selection shown yet
                    tab.clear_figure()
                    tab.details.value = ""
                if not tab._answer_shown:
                    tab.answer.value = ""
                seconds = time.perf_counter() - start
                noted.append(True)
                words = (
                    computing_text(tab, seconds)
                    if tab.clears_at_once
                    else f"Computing {what}… {seconds:.0f} s so far; the results of the earlier "
                    "selection are no longer shown."
                )
                tab.status.value = render.message_html(words, "loading")

    threading.Thread(target=note, name=f"explorer-{tab.key}-computing", daemon=True).start()


class JobPanel:
    """Progress bar, message and Cancel button bound to one :class:`Job` at a time."""

    def __init__(self, key: str) -> None:
        self.progress = widgets.FloatProgress(
            value=0.0, min=0.0, max=1.0, layout=widgets.Layout(width="220px")
        )
        self.progress.add_class("px-progress").add_class(f"px-{key}-progress")
        self.label = widgets.Label("").add_class("px-job-label")
        self.cancel = widgets.Button(
            description="Cancel", button_style="warning", disabled=True, layout=widgets.Layout(width="90px")
        )
        self.cancel.add_class("px-cancel").add_class(f"px-{key}-cancel")
        self.cancel.on_click(self._cancel)
        self.widget = widgets.HBox([self.progress, self.cancel, self.label])
        self.job: Job | None = None

    def _cancel(self, _: object = None) -> None:
        if self.job is not None:
            self.job.cancel()

    def attach(self, job: Job) -> Job:
        """Follow ``job``: progress, message, cancel; returns the job."""
        self.job = job
        self.cancel.disabled = False
        self.progress.value = 0.0
        self.progress.bar_style = ""
        self.label.value = f"{job.name}: starting…"
        job.on_progress(self._update).on_done(self._finish)
        return job

    def _update(self, job: Job) -> None:
        self.progress.value = job.fraction
        self.label.value = f"{job.name}: {job.message}" if job.message else job.name

    def _finish(self, job: Job) -> None:
        self.cancel.disabled = True
        self.progress.value = job.fraction
        styles = {"done": "success", "cancelled": "warning", "failed": "danger"}
        self.progress.bar_style = styles.get(job.status, "")
        secs = f" in {job.seconds:.1f} s" if job.seconds is not None else ""
        text = {"done": f"done{secs}", "cancelled": f"cancelled{secs}", "failed": f"failed: {job.error}"}
        self.label.value = f"{job.name}: {text.get(job.status, job.status)}"

    def forget(self) -> None:
        """Empty the bar and its words once the job has ended (they were about another selection)."""
        if self.running:
            return
        self.progress.value = 0.0
        self.progress.bar_style = ""
        self.label.value = ""

    @property
    def running(self) -> bool:
        """True while the attached job runs."""
        return self.job is not None and self.job.running
