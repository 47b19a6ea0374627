"""The Kernels tab's "Probe now": the shown ops × dtypes × backends probed in the background, in
the kernel's probe sandbox, through :func:`explorer.queries.availability.availability` (which
stores each record as it arrives); the tab redraws from the store when the job ends."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from explorer.app.jobs import Job, JobContext
from explorer.ops import catalog

if TYPE_CHECKING:
    from explorer.app.state import AppState
    from explorer.app.tab import JobPanel

#: seconds "Probe now" waits for a free worker slot of the machine before it fails
PROBE_SLOT_WAIT_S = 600.0


class ProbeController:
    """The "Probe now" button and its background job (one at a time), shown in ``panel``.

    ``shown_ops()`` names the ops on screen, ``registry()`` gives TensorFlow's registry;
    ``on_done(job)`` is called once the job has ended (the button is enabled again by then).
    """

    def __init__(
        self,
        state: AppState,
        panel: JobPanel,
        shown_ops: Callable[[], list[str]],
        registry: Callable[[], Any],
        on_done: Callable[[Job], None],
    ) -> None:
        self.state = state
        self.panel = panel
        self._shown_ops = shown_ops
        self._registry = registry
        self._on_done = on_done
        self.button = widgets.Button(
            description="Probe now",
            button_style="info",
            tooltip="run the shown ops × dtypes in sandboxed workers (cached)",
        )
        self.button.add_class("px-probe")
        self.button.on_click(lambda _: self.start())
        self.job: Job | None = None
        #: the selection the last job probed (op, dtypes, backends, device)
        self.probed_for: tuple[Any, ...] | None = None

    def start(self, wait: bool = False) -> Job:
        """Probe the shown ops × dtypes × backends for the device and mode (eager and xla when mode is
        registry) in the background; results land in the on-disk cache and the view redraws."""
        if self.job is not None and self.job.running:
            raise RuntimeError("a probe sweep is already running; cancel it first")
        ops = [o for o in self._shown_ops() if o in catalog()]
        if not ops:
            raise ValueError(
                f"{self.state.op} is a raw TensorFlow op without a catalog entry: it has registry rows "
                "only, nothing to probe"
            )
        from explorer.analysis.availability_rows import DEFAULT_AVAILABILITY_MODES

        # in registry mode, probe the default modes (torch.compile takes seconds per op: asked for only)
        defaults = [m for m in DEFAULT_AVAILABILITY_MODES if m != "registry"]
        modes = defaults if self.state.mode == "registry" else [self.state.mode]
        selection = (list(self.state.dtypes), list(self.state.backends), [self.state.device], modes)
        self.probed_for = self.selection()
        self.job = Job("probing", lambda ctx: self._probe(ctx, ops, *selection))
        self.panel.attach(self.job)
        self.job.on_done(self._done)
        self.button.disabled = True
        self.job.start()
        if wait:
            self.job.wait()
        return self.job

    def selection(self) -> tuple[Any, ...]:
        """What a probe started now would be about: op, dtypes, backends, device."""
        return (self.state.op, self.state.dtypes, self.state.backends, self.state.device)

    def _probe(
        self,
        ctx: JobContext,
        ops: list[str],
        dtypes: list[str],
        backends: list[str],
        devices: list[str],
        modes: list[str],
    ) -> int:
        """Probe ``ops`` one at a time, in the kernel's probe sandbox
        (:func:`~explorer.runtime.probe.app_probe_sandbox`): while every worker slot of the
        machine is taken (other visitors probing) the job waits for one, saying so, and can be
        cancelled."""
        from explorer.queries import availability
        from explorer.runtime.probe import app_probe_sandbox

        def waiting() -> None:
            ctx.check()
            ctx.progress(0.0, "waiting for a free worker slot (other visitors' probes are running)")

        reg = self._registry()
        done = 0
        with app_probe_sandbox().held(PROBE_SLOT_WAIT_S, waiting) as box:
            for i, op in enumerate(ops):
                ctx.check()
                ctx.progress(i / len(ops), f"{op} ({i + 1}/{len(ops)})")
                result = availability.availability(
                    ops=[op],
                    dtypes=dtypes,
                    backends=backends,
                    devices=devices,
                    modes=modes,
                    progress=False,
                    registry=reg,
                    sandbox=box,
                )
                done += result.probed
        ctx.progress(1.0, f"{done} new probes")
        return done

    def _done(self, job: Job) -> None:
        self.button.disabled = False
        self._on_done(job)
