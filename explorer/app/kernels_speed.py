"""The Kernels tab's "Colour by: speed": the shown cells timed against float32 in the background
(:func:`explorer.queries.speed.speed`, the function ``precision-explorer speed`` asks), in the
tab's job panel (progress in words, cancellable), kept per selection; the heatmap then colours
each timed cell by its ratio to float32 (:func:`explorer.plots.kernel_grid.speed_ratios`).

Speed is measured only in the modes that run (eager, xla, compile): in mode registry nothing ran,
and the control is hidden as the Device control is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from explorer.app.jobs import Job, JobContext
from explorer.app.kernels_probe import PROBE_SLOT_WAIT_S
from explorer.ops import catalog

if TYPE_CHECKING:
    from explorer.app.state import AppState
    from explorer.app.tab import JobPanel

#: the modes in which cells run, so can be timed
TIMED_MODES: tuple[str, ...] = ("eager", "xla", "compile")


class SpeedLayer:
    """The "Colour by" control (``.control``) and the speed job; ``speed_query`` is
    :func:`explorer.queries.speed.speed` unless another function of the same signature is given.
    ``on_change()`` is called when the choice changes or a measurement ends."""

    def __init__(
        self,
        state: AppState,
        panel: JobPanel,
        shown_ops: Callable[[], list[str]],
        on_change: Callable[[], None],
        speed_query: Callable[..., Any] | None = None,
    ) -> None:
        self.state = state
        self.panel = panel
        self._shown_ops = shown_ops
        self._on_change = on_change
        self.speed_query = speed_query
        self.control = widgets.ToggleButtons(
            options=[("availability", "availability"), ("speed", "speed")],
            value="availability",
            description="Colour by",
            tooltips=["status of each cell", "time per call relative to float32 (measured on demand)"],
            style={"button_width": "90px"},
        )
        self.control.add_class("px-kernels-colour-by")
        self.control.observe(lambda _: self._chosen(), names="value")
        self.job: Job | None = None
        #: speed rows per selection (:meth:`selection`)
        self.measured: dict[tuple[Any, ...], list[Any]] = {}
        #: selections timed (or tried) since speed was chosen
        self.tried: set[tuple[Any, ...]] = set()
        #: what the last measurement said: its coverage, the verdicts, threads and load
        #: (:func:`speed_words`)
        self.coverage: dict[tuple[Any, ...], str] = {}

    @property
    def active(self) -> bool:
        """True when the heatmap is to be coloured by speed (chosen, and a mode that runs)."""
        return self.control.value == "speed" and self.state.mode in TIMED_MODES

    def show_control(self) -> None:
        """Shown only in the modes that run (hidden in mode registry)."""
        self.control.layout.display = None if self.state.mode in TIMED_MODES else "none"

    def selection(self) -> tuple[Any, ...]:
        """What a measurement started now would time: ops, dtypes, backends, device, mode."""
        ops = tuple(o for o in self._shown_ops() if o in catalog())
        return (ops, self.state.dtypes, self.state.backends, self.state.device, self.state.mode)

    def rows(self) -> list[Any] | None:
        """The speed rows of the shown selection (None: not measured yet)."""
        return self.measured.get(self.selection())

    def _chosen(self) -> None:
        self.tried.discard(self.selection())  # chosen anew: try again even if the last run failed
        self._on_change()

    def ensure_measured(self) -> None:
        """Start timing the shown selection when colouring by speed and it has no rows yet (once
        per selection: a failed or cancelled run is not restarted until speed is chosen again)."""
        selection = self.selection()
        running = self.job is not None and self.job.running
        wanted = self.active and bool(selection[0]) and self.rows() is None
        if wanted and not running and selection not in self.tried:
            self.tried.add(selection)
            self.start()

    def start(self, wait: bool = False) -> Job:
        """Time the shown cells and float32 in the background (one job at a time)."""
        if self.job is not None and self.job.running:
            raise RuntimeError("a speed measurement is already running; cancel it first")
        selection = self.selection()
        if not selection[0]:
            raise ValueError(f"{self.state.op} has no catalog entry: nothing to time")
        if selection[4] not in TIMED_MODES:
            raise ValueError(f"mode {selection[4]} runs nothing; pick one of {', '.join(TIMED_MODES)}")
        self.job = Job("timing", lambda ctx: self._measure(ctx, selection))
        self.panel.attach(self.job)
        self.job.on_done(self._done)
        self.job.start()
        if wait:
            self.job.wait()
        return self.job

    def _measure(self, ctx: JobContext, selection: tuple[Any, ...]) -> int:
        from explorer.queries import speed as speed_queries
        from explorer.runtime.probe import app_probe_sandbox

        ops, dtypes, backends, device, mode = selection
        query = self.speed_query or speed_queries.speed
        total = len(speed_queries.plan(list(ops), list(dtypes), list(backends), [mode], device))
        rows: list[Any] = []

        def arrived(row: Any) -> None:
            ctx.check()  # a cancel stops the run when the next cell arrives
            rows.append(row)
            ctx.progress_steps(
                len(rows),
                total,
                f"timed {row.op} in {row.dtype} on {row.backend} {row.mode} ({len(rows)}/{total} cells)",
            )

        def waiting() -> None:
            ctx.check()
            ctx.progress(0.0, "waiting for a free worker slot (other visitors' probes are running)")

        # the probes' sandbox: its workers run only while it holds one of the machine's slots
        with app_probe_sandbox().held(PROBE_SLOT_WAIT_S, waiting) as box:
            ctx.progress(0.0, f"timing {total} cells (each dtype and float32) in sandboxed workers")
            result = query(
                ops=list(ops),
                dtypes=list(dtypes),
                backends=list(backends),
                modes=[mode],
                device=device,
                sandbox=box,
                on_row=arrived,
            )
        self.measured[selection] = list(result.rows)
        self.coverage[selection] = speed_words(result)
        ctx.progress(1.0, self.coverage[selection])
        return len(result.rows)

    def _done(self, job: Job) -> None:
        self._on_change()


def speed_words(result: Any) -> str:
    """A measurement in words: its coverage, how many cells were faster, slower or undecided
    than float32 (their intervals: :mod:`explorer.analysis.paired_ratio`), the threads, the load
    and, when the machine was busy, why.

    >>> from explorer.queries.speed import SpeedResult, SpeedRow
    >>> verdicts = (("float32", "baseline"), ("float16", "slower"), ("bfloat16", ""))
    >>> rows = [SpeedRow("torch", "exp", "65536", d, "CPU", "eager", "ok", verdict=v, threads=1, load=0.5,
    ...                  cores=2) for d, v in verdicts]
    >>> result = SpeedResult(rows=rows, cells_planned=3, cells_measured=3, seconds=2.0)
    >>> for part in speed_words(result).split("; "):
    ...     print(part)
    measured 3 of 3 cells in 2.0 s
    against float32: 1 slower
    intra-op threads: torch 1
    load average 0.5 on 2 cores while timing
    """
    counts: dict[str, int] = {}
    for row in result.rows:
        if row.verdict in ("faster", "slower", "undecided"):
            counts[row.verdict] = counts.get(row.verdict, 0) + 1
    verdicts = ", ".join(f"{counts[v]} {v}" for v in ("faster", "slower", "undecided") if v in counts)
    parts = [result.coverage(), *([f"against float32: {verdicts}"] if verdicts else []), *result.conditions()]
    return "; ".join(parts)
