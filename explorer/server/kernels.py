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
get an error page instead of a fresh kernel.  Pooled kernels run the notebook one per CPU
core at a time (:meth:`CappedKernelManager._initialize_in_turn`).  Each time a pooled kernel
has run the whole notebook the manager logs :data:`POOL_READY` (Voila's own "pool is filled"
line comes when the kernels have started, before they ran anything).

A refill after a visitor took a pooled kernel waits Voila's ``fill_delay`` first.  Voila puts
such a refill into the pool at once, as a task that sleeps out the delay: a page arriving during
the delay would wait for it (the delay, then a kernel start) rather than start a kernel of its
own, and stopping the server would wait for it to start a kernel only to shut it down.  Here the
refill is a timer (:meth:`CappedKernelManager._fill_within_cap`) that puts the kernel into the
pool when the delay is over: the pool holds only kernels being started or ready, and
:meth:`CappedKernelManager.shutdown_all` cancels the timers.  A page that arrives while the pool's
kernel is still starting (just after the server started) waits for it, at most
:data:`POOL_WAIT_S` seconds (:meth:`CappedKernelManager.wait_for_pool`), rather than start a
second, cold kernel beside it.

**A kernel per visitor, not per page request.**  Voila starts a kernel for each page request
and runs the notebook in it; the page's JavaScript then opens the kernel's websocket.  A client
that never does (``curl``, a link preview, a monitor, a prefetch) left its kernel alive until
the idle culler, so forty plain ``GET /`` filled the server for a quarter of an hour.  Here:

- a kernel given to a page is *awaiting* its websocket; once the kernel has been quiet (not
  busy, no message) for :attr:`CappedKernelManager.connect_grace` seconds without a websocket
  having connected, it is shut down (:meth:`CappedKernelManager.reap_unvisited`, every second);
  a websocket opening (:meth:`CappedKernelManager.mark_connected`) makes it a visitor's kernel,
  which only the idle culler ends;
- the cap counts every kernel (their memory is real), but a page that finds the cap taken while
  some kernels still await their websocket waits for them to be given back (at most
  :attr:`CappedKernelManager.visitor_wait` seconds) instead of getting the "full" page: only
  connected visitors make the server full for long;
- each client address may start at most :attr:`CappedKernelManager.client_starts` kernels per
  :data:`RATE_WINDOW_S` seconds (:meth:`CappedKernelManager.admit_client`; a page served from
  the warm pool counts too); past it, the page is refused with HTTP 429 and no kernel starts.
  Behind a reverse proxy every visitor has the proxy's address: set it to 0 (no limit) there.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import time
from collections import deque
from datetime import UTC, datetime
from typing import Any

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado.ioloop import PeriodicCallback
from tornado.web import HTTPError
from traitlets import Float, Integer

from explorer.server.limits import (
    DEFAULT_CLIENT_STARTS,
    DEFAULT_CONNECT_GRACE_S,
    DEFAULT_MAX_KERNELS,
    RATE_WINDOW_S,
)

#: What the server logs each time a pre-heated kernel has run the whole notebook (followed by
#: ``<ready> of <pool size> ready``): a load test or a teacher can wait for a warm pool.
POOL_READY = "pre-heated kernel ran the notebook:"
#: Most seconds a page waits for a pooled kernel that is still starting.
POOL_WAIT_S = 60.0
#: Default most seconds a page waits for kernels awaiting their websocket to be given back.
DEFAULT_VISITOR_WAIT_S = 90.0
#: What the server logs when it gives back a kernel whose page never connected.
GIVEN_BACK = "kernel given back: no websocket connected"
#: True while a kernel is started for Voila's warm pool (not for a page)
_FOR_POOL: contextvars.ContextVar[bool] = contextvars.ContextVar("px_for_pool", default=False)


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

    connect_grace = Float(
        DEFAULT_CONNECT_GRACE_S,
        min=0.5,
        config=True,
        help="Seconds a page's kernel may stay quiet without its websocket having connected before "
        "it is shut down (a client that loaded the page but runs no JavaScript).",
    )
    client_starts = Integer(
        DEFAULT_CLIENT_STARTS,
        min=0,
        config=True,
        help=f"Kernels one client address may start per {RATE_WINDOW_S:.0f} s (pages beyond: HTTP 429); "
        "0: no limit (behind a reverse proxy, where every visitor has the proxy's address).",
    )
    visitor_wait = Float(
        DEFAULT_VISITOR_WAIT_S,
        min=0,
        config=True,
        help="Most seconds a page waits for kernels awaiting their websocket to be given back when "
        "they fill the cap, before it gets the full page.",
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._admitted: set[str] = set()
        #: kernels given to a page whose websocket has not connected yet: id -> when (monotonic)
        self._awaiting: dict[str, float] = {}
        #: kernels whose websocket has connected (visitors)
        self._connected: set[str] = set()
        #: kernel starts per client address (monotonic times within the window)
        self._client_starts: dict[str, deque[float]] = {}
        self._reaper: PeriodicCallback | None = None
        self._reaping: set[str] = set()
        self._giving_back: set[asyncio.Future[None]] = set()
        #: refills waiting out Voila's ``fill_delay`` (timers; cancelled by :meth:`shutdown_all`)
        self._refills: set[asyncio.TimerHandle] = set()
        voila_fill = getattr(type(self), "fill_if_needed", None)
        if voila_fill is not None:  # Voila's pre-heated pool: its __init__ fills the pool next
            # instance attributes shadow the pool class's methods (which override this class's)
            self._voila_fill: Any = voila_fill
            self._voila_initialize: Any = type(self)._initialize  # type: ignore[attr-defined]
            self._warming = asyncio.Semaphore(os.cpu_count() or 1)
            self._voila_rendered: Any = type(self).get_rendered_notebook  # type: ignore[attr-defined]
            setattr(self, "fill_if_needed", self._fill_within_cap)  # noqa: B010
            setattr(self, "_initialize", self._initialize_in_turn)  # noqa: B010
            setattr(self, "get_rendered_notebook", self._rendered_for_page)  # noqa: B010

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
            started = str(await super().start_kernel(kernel_id=kernel_id, path=path, **kwargs))
        finally:
            self._admitted.discard(kernel_id)
        if not _FOR_POOL.get():
            self.await_websocket(started)
        return started

    # ------------------------------------------------------------------ a kernel per visitor

    def await_websocket(self, kernel_id: str) -> None:
        """``kernel_id`` was given to a page: given back unless its websocket connects (module doc)."""
        self._awaiting[kernel_id] = time.monotonic()
        if self._reaper is None:
            interval_ms = 1000 * min(1.0, self.connect_grace / 4)
            self._reaper = PeriodicCallback(self._reap_tick, interval_ms)
            self._reaper.start()

    def mark_connected(self, kernel_id: str) -> None:
        """A websocket to ``kernel_id`` opened: it is a visitor's kernel from now on."""
        if kernel_id in self:
            self._awaiting.pop(kernel_id, None)
            self._connected.add(kernel_id)

    def awaiting_count(self) -> int:
        """Kernels given to a page whose websocket has not connected yet."""
        return len(self._awaiting)

    def connected_count(self) -> int:
        """Kernels whose websocket has connected (visitors), still running."""
        return len(self._connected & set(self.list_kernel_ids()))

    def _quiet_for(self, kernel_id: str, now: float) -> float:
        """Seconds since the page got ``kernel_id`` or its last message, whichever is later;
        0 while it is busy (running the notebook)."""
        kernel = self.get_kernel(kernel_id)
        if getattr(kernel, "execution_state", "") in ("busy", "starting"):
            return 0.0
        since = now - self._awaiting[kernel_id]
        last = getattr(kernel, "last_activity", None)
        if isinstance(last, datetime):
            since = min(since, (datetime.now(UTC) - last).total_seconds())
        return since

    def _reap_tick(self) -> None:
        self.reap_unvisited()

    def reap_unvisited(self) -> list[str]:
        """Shut down each kernel awaiting its websocket that has been quiet for
        :attr:`connect_grace` seconds; the ids shut down."""
        now = time.monotonic()
        given_back = []
        for kernel_id in list(self._awaiting):
            if kernel_id not in self:  # shut down (the page's beacon, the culler)
                self._awaiting.pop(kernel_id, None)
                continue
            if kernel_id in self._reaping or self._quiet_for(kernel_id, now) < self.connect_grace:
                continue
            self._reaping.add(kernel_id)
            given_back.append(kernel_id)
            self.log.info("%s within %.0f s: %s", GIVEN_BACK, self.connect_grace, kernel_id)
            task = asyncio.ensure_future(self._give_back(kernel_id))
            self._giving_back.add(task)
            task.add_done_callback(self._giving_back.discard)
        return given_back

    async def _give_back(self, kernel_id: str) -> None:
        try:
            if kernel_id in self:
                await self.shutdown_kernel(kernel_id, now=True)
        except Exception as exc:  # already gone: nothing to give back
            self.log.warning("giving back kernel %s failed: %s", kernel_id, exc)
        finally:
            self._awaiting.pop(kernel_id, None)
            self._reaping.discard(kernel_id)
        if getattr(self, "_voila_fill", None) is not None:  # room again: a refill the cap refused
            for notebook in list(self._pools_now()):
                self._fill_within_cap(0, notebook)

    def remove_kernel(self, kernel_id: str) -> Any:
        """The base class's, forgetting the kernel's visitor state too."""
        self._awaiting.pop(kernel_id, None)
        self._connected.discard(kernel_id)
        return super().remove_kernel(kernel_id)

    def admit_client(self, address: str) -> float | None:
        """Count a kernel start for the client ``address``: None when admitted, else the seconds
        until it may start another (:attr:`client_starts` per :data:`RATE_WINDOW_S`)."""
        if self.client_starts == 0:
            return None
        now = time.monotonic()
        starts = self._client_starts.setdefault(address, deque())
        while starts and now - starts[0] >= RATE_WINDOW_S:
            starts.popleft()
        if len(starts) >= self.client_starts:
            return RATE_WINDOW_S - (now - starts[0])
        starts.append(now)
        if len(self._client_starts) > 10_000:  # forget the addresses without a recent start
            for key in [k for k, v in self._client_starts.items() if not v or now - v[-1] >= RATE_WINDOW_S]:
                del self._client_starts[key]
        return None

    async def wait_for_room(self, gone: Any) -> None:
        """While the cap is taken and some kernels still await their websocket (they will be given
        back), wait: at most :attr:`visitor_wait` seconds, or until ``gone()`` (the client left)."""
        deadline = time.monotonic() + self.visitor_wait
        while self.is_full() and self._awaiting and not gone() and time.monotonic() < deadline:
            await asyncio.sleep(0.25)

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
        nothing: a visitor beyond the pool gets a kernel of its own, capped as always).

        With a delay (``None`` is Voila's ``fill_delay``), the refill is a timer that calls this
        again without one when the delay is over, so the pool never holds a kernel that is only
        a promise (see the module doc)."""
        wait = getattr(self, "fill_delay", 0.0) if delay is None else delay
        if wait > 0:
            loop = asyncio.get_event_loop()
            handle: asyncio.TimerHandle | None = None

            def refill() -> None:
                self._refills.discard(handle)
                self._fill_within_cap(0, notebook_name, **kwargs)

            handle = loop.call_later(wait, refill)
            self._refills.add(handle)
            return
        pool = self._pools_now().get(notebook_name, [])
        wanted = self._pool_size(notebook_name) - len(pool)
        if wanted <= 0:
            return
        starting = sum(1 for item in self._pool_items() if not item.done())
        if wanted > self.max_kernels - self.kernel_count() - starting:
            self.log.info(
                "pre-heated pool not refilled: %d kernels running, at most %d",
                self.kernel_count(),
                self.max_kernels,
            )
            return
        self._voila_fill(self, delay=0, notebook_name=notebook_name, **kwargs)

    async def wait_for_pool(self, notebook_name: str | None, timeout: float = POOL_WAIT_S) -> None:
        """Until the pool's first kernel for ``notebook_name`` has started (at most ``timeout``
        seconds; at once when there is none, or it has started): Voila serves a page from the
        pool only once one has, and would start a cold kernel for a page arriving before."""
        pool = self._pools_now().get(notebook_name, [])
        if not pool or pool[0].done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(pool[0]), timeout)
        except Exception:  # a failed or slow start: the page gets a kernel of its own
            self.log.warning("pre-heated kernel not started within %.0f s", timeout)

    def pending_refills(self) -> int:
        """Refills waiting out the fill delay (not in the pool yet)."""
        return len(self._refills)

    async def shutdown_all(self, now: bool = False) -> None:  # type: ignore[override]
        """Cancel the refills still waiting out their delay, then shut every kernel down."""
        if self._refills:
            self.log.info(
                "%d pre-heated pool refill(s) cancelled before their delay ran out", len(self._refills)
            )
        for handle in list(self._refills):
            handle.cancel()
        self._refills.clear()
        if self._reaper is not None:
            self._reaper.stop()
        await super().shutdown_all(now=now)

    async def _initialize_in_turn(
        self, notebook_path: str, kernel_id: str | None = None, **kwargs: Any
    ) -> Any:
        """Voila's ``_initialize`` (start a pooled kernel and the task that runs the notebook in
        it), with at most one kernel per CPU core running the notebook at a time: a pool of 40
        filled at once would run 40 notebooks side by side, each slower than the executor's
        timeout allows on a small machine; in turn, the first kernels are ready within seconds."""
        await self._warming.acquire()
        token = _FOR_POOL.set(True)  # this kernel start is the pool's, not a page's
        try:
            content = await self._voila_initialize(self, notebook_path, kernel_id, **kwargs)
        except BaseException:
            self._warming.release()
            raise
        finally:
            _FOR_POOL.reset(token)
        content["task"].add_done_callback(self._pooled_kernel_ready)
        return content

    async def _rendered_for_page(self, notebook_name: str, *args: Any, **kwargs: Any) -> Any:
        """Voila's ``get_rendered_notebook`` (a page takes a pooled kernel): that kernel now
        awaits the page's websocket."""
        rendered = await self._voila_rendered(self, notebook_name, *args, **kwargs)
        self.await_websocket(str(rendered[2]))
        return rendered

    def _pooled_kernel_ready(self, task: asyncio.Task[Any]) -> None:
        self._warming.release()
        run = [
            item.result()["task"]
            for item in self._pool_items()
            if item.done() and not item.cancelled() and item.exception() is None
        ]
        if task not in run:  # a visitor took it before it had run the whole notebook
            return
        ready = sum(1 for t in run if t.done())
        self.log.info(
            "%s %d of %d ready", POOL_READY, ready, self._pool_size(getattr(self, "notebook_path", None))
        )
