"""A kernel manager that refuses to start more than ``max_kernels`` kernels.

Voila starts one kernel per page load, and a kernel with TensorFlow imported holds
~700 MB, so an uncapped server runs out of memory with a roomful of visitors.
:class:`CappedKernelManager` is Voila's default kernel manager
(jupyter_server's ``AsyncMappingKernelManager``) plus a count: a start that would
exceed the cap raises :class:`ServerFull` (an HTTP 503) before any process is spawned.

Kernels being started count from the moment they are admitted (a set of kernel ids,
so a kernel is never counted twice), so concurrent page loads cannot overshoot the cap.

With ``--preheat_kernel=True`` Voila builds its kernel manager as a subclass of this one
that keeps a pool of kernels which have already run the notebook, and starts a new one each
time a visitor takes one.  Pooled kernels count towards the cap, and the refill starts only
while the cap leaves room for it (:meth:`CappedKernelManager._fill_within_cap`): a refill
refused by the cap would leave a failed entry in Voila's pool, and the next visitor would
get an error page instead of a fresh kernel.  Each time a pooled kernel has run the whole
notebook the manager logs :data:`POOL_READY` (Voila's own "pool is filled" line comes when
the kernels have started, before they ran anything).
"""

from __future__ import annotations

import asyncio
from typing import Any

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado.web import HTTPError
from traitlets import Integer

from explorer.server.limits import DEFAULT_MAX_KERNELS

#: What the server logs each time a pre-heated kernel has run the whole notebook (followed by
#: ``<ready> of <pool size> ready``): a load test or a teacher can wait for a warm pool.
POOL_READY = "pre-heated kernel ran the notebook:"


class ServerFull(HTTPError):
    """No kernel slot is free: HTTP 503; ``visitors`` is the number of kernels running."""

    def __init__(self, visitors: int) -> None:
        super().__init__(503, "all %d kernel slots are in use", visitors, reason="Server Full")
        self.visitors = visitors


class CappedKernelManager(AsyncMappingKernelManager):
    """``AsyncMappingKernelManager`` that starts at most ``max_kernels`` kernels at a time."""

    max_kernels = Integer(
        DEFAULT_MAX_KERNELS,
        min=1,
        config=True,
        help="Most kernels alive at once (one per visitor); further starts raise ServerFull (503).",
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._admitted: set[str] = set()
        voila_fill = getattr(type(self), "fill_if_needed", None)
        if voila_fill is not None:  # Voila's pre-heated pool: its __init__ fills the pool next
            self._voila_fill: Any = voila_fill
            setattr(self, "fill_if_needed", self._fill_within_cap)  # noqa: B010  (shadows the class's)

    def kernel_count(self) -> int:
        """Kernels running or being started."""
        return len(set(self.list_kernel_ids()) | self._admitted)

    def is_full(self) -> bool:
        """Whether another kernel start would be refused."""
        return self.kernel_count() >= self.max_kernels

    async def start_kernel(  # type: ignore[override]  # jupyter_client types it as sync
        self, *, kernel_id: str | None = None, path: Any = None, **kwargs: Any
    ) -> str:
        """Start a kernel like the base class, or raise :class:`ServerFull` when at the cap.

        Asking for a ``kernel_id`` that is already running returns it (the base class's
        behaviour) and is never refused.
        """
        if kernel_id is not None and kernel_id in self:
            return str(await super().start_kernel(kernel_id=kernel_id, path=path, **kwargs))
        count = self.kernel_count()
        if count >= self.max_kernels:
            raise ServerFull(count)
        kernel_id = kernel_id if kernel_id is not None else self.new_kernel_id(**kwargs)
        self._admitted.add(kernel_id)
        try:
            return str(await super().start_kernel(kernel_id=kernel_id, path=path, **kwargs))
        finally:
            self._admitted.discard(kernel_id)

    # ------------------------------------------------------------------ Voila's pre-heated pool
    # Voila 0.5's pool (checked against 0.5.13): ``self._pools`` maps a notebook to a list of
    # tasks, each giving ``{"task": the task running the notebook, "kernel_id": ...}``.

    def _pool_size(self, notebook: str | None) -> int:
        config: dict[str | None, dict[str, Any]] = getattr(self, "kernel_pools_config", {})
        default = config.get("default", {})
        return int(config.get(notebook, default).get("pool_size", default.get("pool_size", 1)))

    def _pools_now(self) -> dict[str | None, list[asyncio.Task[Any]]]:
        pools: dict[str | None, list[asyncio.Task[Any]]] = getattr(self, "_pools", {})
        return pools

    def _pool_items(self) -> list[asyncio.Task[Any]]:
        return [item for pool in self._pools_now().values() for item in pool]

    def _fill_within_cap(
        self, delay: float | None = None, notebook_name: str | None = None, **kwargs: Any
    ) -> None:
        """Voila's ``fill_if_needed``, when the pool's missing kernels fit under the cap (else
        nothing: a visitor beyond the pool gets a kernel of its own, capped as always)."""
        pool = self._pools_now().get(notebook_name, [])
        wanted = self._pool_size(notebook_name) - len(pool)
        starting = sum(1 for item in self._pool_items() if not item.done())
        if wanted > self.max_kernels - self.kernel_count() - starting:
            self.log.info(
                "pre-heated pool not refilled: %d kernels running, at most %d",
                self.kernel_count(),
                self.max_kernels,
            )
            return
        before = {id(item) for item in pool}
        self._voila_fill(self, delay=delay, notebook_name=notebook_name, **kwargs)
        for item in self._pools_now().get(notebook_name, []):
            if id(item) not in before:
                item.add_done_callback(self._pooled_kernel_started)

    def _pooled_kernel_started(self, item: asyncio.Task[Any]) -> None:
        if not item.cancelled() and item.exception() is None:
            item.result()["task"].add_done_callback(self._pooled_kernel_ready)

    def _pooled_kernel_ready(self, _: Any) -> None:
        ready = sum(
            1
            for item in self._pool_items()
            if item.done()
            and not item.cancelled()
            and item.exception() is None
            and item.result()["task"].done()
        )
        self.log.info(
            "%s %d of %d ready", POOL_READY, ready, self._pool_size(getattr(self, "notebook_path", None))
        )
