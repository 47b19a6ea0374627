"""A kernel manager that refuses to start more than ``max_kernels`` kernels.

Voila starts one kernel per page load, and a kernel with TensorFlow imported holds
~700 MB, so an uncapped server runs out of memory with a roomful of visitors.
:class:`CappedKernelManager` is Voila's default kernel manager
(jupyter_server's ``AsyncMappingKernelManager``) plus a count: a start that would
exceed the cap raises :class:`ServerFull` (an HTTP 503) before any process is spawned.

Kernels being started count from the moment they are admitted (a set of kernel ids,
so a kernel is never counted twice), so concurrent page loads cannot overshoot the cap.
With Voila's ``--preheat`` pool, pooled kernels count too.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado.web import HTTPError
from traitlets import Integer

from explorer.server.limits import DEFAULT_MAX_KERNELS


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
