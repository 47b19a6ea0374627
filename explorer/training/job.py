"""Training in the background: :func:`start_training` runs :func:`run_policies` in a
:class:`explorer.runtime.jobs.Job` (the project's one job class) and returns it at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from explorer.runtime.jobs import Job, JobContext
from explorer.training.config import POLICY_NAMES, Record, TrainingConfig, TrainingResult
from explorer.training.keras_loop import run_policies


def start_training(
    policies: Sequence[str] = POLICY_NAMES,
    callback: Callable[[Record], None] | None = None,
    **config_fields: Any,
) -> Job:
    """Start ``run_policies`` in a background :class:`~explorer.runtime.jobs.Job` and return it at once.

    The config is checked here, in the caller's thread, so bad input raises at once.
    ``job.records`` fills up live (every ``StepRecord``, ``GradientHistogram`` and
    ``EpochRecord``); ``job.progress`` is (done, total) steps over all policies;
    ``job.cancel()`` stops the run between steps; ``job.wait()`` joins and returns the
    list of :class:`TrainingResult` (the ones that ran, when cancelled; RuntimeError,
    from the original error, when the run failed).

    ``callback`` runs in the training thread: an app should only append to its
    state there (or schedule a redraw), not block.
    """
    for p in [policies] if isinstance(policies, str) else policies:
        TrainingConfig(policy=p, **config_fields).validated()

    def work(ctx: JobContext) -> list[TrainingResult]:
        def record(rec: Record) -> None:
            ctx.emit(rec)
            if callback is not None:
                callback(rec)

        return run_policies(
            policies,
            callback=record,
            cancel=ctx.cancel_event,
            progress=lambda done, total: ctx.progress_steps(done, total, f"step {done}/{total}"),
            **config_fields,
        )

    return Job("training", work).start()
