"""Voila for workshop mode: a Host check and a kernel cap, on top of Voila 0.5's standalone app.

Run as ``python -m explorer.server.voila_main NOTEBOOK [voila options]``; every Voila
option works, plus ``--WorkshopVoila.allowed_hosts=NAME`` (repeatable),
``--CappedKernelManager.max_kernels=N``, ``--CappedKernelManager.connect_grace=SECONDS`` and
``--CappedKernelManager.client_starts=N`` (a kernel per visitor, not per page request: see
:mod:`explorer.server.kernels`).

Why this mechanism (checked against Voila 0.5.13 and jupyter_server 2.21):

- Standalone Voila builds its own ``tornado.web.Application`` and sets
  ``allow_remote_access=True``, so jupyter_server's Host check is off.  Turning it back on
  through ``--Voila.tornado_settings`` would cover only the handlers derived from
  ``JupyterHandler`` (not Voila's static and file handlers), would accept every 127.x
  address, and answers with an HTML error page.  Running Voila as a jupyter_server
  extension instead brings the whole Jupyter server (contents and kernels REST API) along.
  So :class:`WorkshopVoila` puts one routing rule in front of all of Voila's routes
  (tornado's documented ``Rule``/``Matcher`` API): a request whose ``Host`` header is not
  allowed goes to :class:`ForeignHostHandler` (403, plain text) and never reaches a
  Voila handler, so no kernel starts and no file is read.
- The cap lives in the kernel manager (:class:`~explorer.server.kernels.CappedKernelManager`,
  Voila's ``multi_kernel_manager_class``), the one place every kernel start goes through,
  pooled kernels included.  The notebook page handler is swapped for
  :class:`CappedVoilaHandler`, which answers "the explorer is full" (503) before rendering
  anything when no slot is free, and turns a :class:`~explorer.server.kernels.ServerFull`
  raised by a racing start into the same page.
- With ``--preheat_kernel=True`` Voila keeps a pool of kernels that have already run the
  notebook; :class:`~explorer.server.kernels.CappedKernelManager` refills it only within the
  cap and logs :data:`~explorer.server.kernels.POOL_READY` as each pooled kernel is ready; a
  page arriving while the pool's kernel is still starting waits for it
  (:meth:`~explorer.server.kernels.CappedKernelManager.wait_for_pool`) instead of starting a
  cold kernel of its own.
- The kernel websocket is :class:`~explorer.server.websocket.KernelChannelsHandler`: the v1
  protocol only, because Voila's own handler spins on legacy-protocol binary frames.
- Started by ``precision-explorer app``, the server stops when that launcher dies, even by
  SIGKILL (:func:`~explorer.server.process_tree.stop_with_launcher`: Voila's own clean stop,
  which shuts its kernels down; kernels left by a hard exit follow their parent too, ipykernel
  watching ``JPY_PARENT_PID``), and removes the launcher's temporary directory.
"""

from __future__ import annotations

import html
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from tornado.httputil import HTTPServerRequest
from tornado.log import access_log
from tornado.routing import Matcher, Rule
from tornado.web import RequestHandler
from traitlets import List, Unicode, validate
from voila.app import Voila
from voila.tornado.handler import TornadoVoilaHandler
from voila.tornado.kernel_websocket_handler import VoilaKernelWebsocketHandler

from explorer.server.hosts import host_allowed, normalize_host_name
from explorer.server.kernels import CappedKernelManager, ServerFull
from explorer.server.process_tree import (
    LAUNCHER_DIR_ENV,
    LAUNCHER_DIR_PREFIX,
    LAUNCHER_ENV,
    stop_with_launcher,
)
from explorer.server.websocket import KernelChannelsHandler

#: Seconds a refused visitor is told to wait (the ``Retry-After`` header).
RETRY_AFTER_S = 120

FOREIGN_HOST_MESSAGE = (
    "403 Forbidden: this server answers only requests for 127.0.0.1, localhost or [::1] "
    "(and names given with --allow-host).\n"
)


def full_page(visitors: int) -> str:
    """The HTML page a visitor gets while every kernel slot is taken (escaped throughout).

    >>> "The explorer is full (3 visitors); try again in a few minutes" in full_page(3)
    True
    """
    count = int(visitors)
    noun = "visitor" if count == 1 else "visitors"
    message = html.escape(f"The explorer is full ({count} {noun}); try again in a few minutes.")
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<title>Precision Explorer is full</title></head>\n"
        "<body style='font-family: sans-serif; margin: 3em;'>\n"
        f"<h1>Precision Explorer</h1>\n<p class='px-full'>{message}</p>\n</body></html>\n"
    )


def busy_page(wait_s: float) -> str:
    """The HTML page for a client that loaded the app too often lately (HTTP 429).

    >>> "try again in 12 s" in busy_page(11.2)
    True
    """
    message = html.escape(
        f"Too many page loads from your address in the last minute; try again in {math.ceil(wait_s)} s."
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<title>Precision Explorer: too many page loads</title></head>\n"
        "<body style='font-family: sans-serif; margin: 3em;'>\n"
        f"<h1>Precision Explorer</h1>\n<p class='px-busy'>{message}</p>\n</body></html>\n"
    )


class ForeignHostHandler(RequestHandler):
    """Every request with a disallowed ``Host`` header: 403 with a short plain-text message."""

    def prepare(self) -> None:
        """Answer before any method handler (or websocket upgrade) runs."""
        self.log_refusal()
        self.set_status(403)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.finish(FOREIGN_HOST_MESSAGE)

    def log_refusal(self) -> None:
        """One warning line per refused request (the Host value quoted, so it cannot forge log lines)."""
        access_log.warning("refused request for Host %r (not an allowed host name)", self.request.host)

    def check_xsrf_cookie(self) -> None:
        """No xsrf check: the request is refused anyway, with the plain 403."""


class ForeignHostMatcher(Matcher):
    """Matches the requests whose ``Host`` header is not allowed."""

    def __init__(self, extra_names: frozenset[str]) -> None:
        self.extra_names = extra_names

    def match(self, request: HTTPServerRequest) -> dict[str, Any] | None:
        """``{}`` (match, no arguments) for a foreign host; None lets the other routes try."""
        return None if host_allowed(request.host, self.extra_names) else {}


class CappedVoilaHandler(TornadoVoilaHandler):
    """Voila's notebook page, or the "explorer is full" page (503) when no kernel slot is free."""

    async def prepare(self) -> None:
        """Refuse a page load that would start a kernel when the kernel manager is full."""
        await super().prepare()
        if self._finished or self.request.method != "GET":
            return
        path = self.path_args[0] if self.path_args else ""
        if self.notebook_path and path:  # single-notebook mode: other paths redirect to files
            return
        manager = self.kernel_manager
        notebook = self.notebook_path or path
        if hasattr(manager, "kernel_pools_config"):  # a pre-heated pool (Voila's pool class)
            # a page arriving while the pool's kernel still starts is served from it
            await manager.wait_for_pool(notebook)
        if manager.is_full() and not manager.get_pool_size(notebook):
            # kernels whose page never connected are given back: wait for them, not refuse
            await manager.wait_for_room(self.client_gone)
        if self.client_gone():
            self.finish()
            return
        if manager.is_full() and not manager.get_pool_size(notebook):
            self.write_full_page(manager.kernel_count())
            return
        wait = manager.admit_client(self.request.remote_ip or "")
        if wait is not None:
            self.write_busy_page(wait)

    def client_gone(self) -> bool:
        """Whether the client closed its connection (a page that waited no longer has a reader)."""
        stream = getattr(self.request.connection, "stream", None)
        return bool(stream is not None and stream.closed())

    def write_busy_page(self, wait_s: float) -> None:
        """Finish the request with HTTP 429: this address started too many kernels lately."""
        self.clear()
        self.set_status(429)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.set_header("Retry-After", str(max(1, math.ceil(wait_s))))
        self.finish(busy_page(wait_s))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """The full page for :class:`ServerFull` (a start that lost a race); Voila's page otherwise."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, ServerFull):
            self.write_full_page(exc.visitors)
        else:
            super().write_error(status_code, **kwargs)

    def write_full_page(self, visitors: int) -> None:
        """Finish the request with :func:`full_page` (HTTP 503, ``Retry-After``)."""
        self.clear()
        self.set_status(503)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.set_header("Retry-After", str(RETRY_AFTER_S))
        self.finish(full_page(visitors))


class WorkshopVoila(Voila):
    """Voila with the Host guard in front of every route and the kernel cap (see the module doc)."""

    allowed_hosts = List(
        Unicode(),
        [],
        config=True,
        help="Host names served besides 127.0.0.1, localhost and [::1] (e.g. a workshop proxy's name).",
    )

    @validate("allowed_hosts")
    def _normalize_allowed_hosts(self, proposal: Any) -> list[str]:
        return [normalize_host_name(name) for name in proposal["value"]]

    def initialize(self, argv: Any = None) -> None:
        """Voila's initialisation, with :class:`CappedKernelManager` as the kernel manager."""
        super().initialize(argv)
        configuration = self.voila_configuration
        if not issubclass(configuration.multi_kernel_manager_class, CappedKernelManager):
            if "multi_kernel_manager_class" in self.config.VoilaConfiguration:
                raise ValueError(
                    "VoilaConfiguration.multi_kernel_manager_class must subclass CappedKernelManager"
                )
            configuration.multi_kernel_manager_class = CappedKernelManager

    def init_handlers(self) -> list[Any]:
        """Voila's routes, with the notebook page served by :class:`CappedVoilaHandler` and the
        kernel websocket by :class:`~explorer.server.websocket.KernelChannelsHandler`."""
        replacements = {
            TornadoVoilaHandler: CappedVoilaHandler,
            VoilaKernelWebsocketHandler: KernelChannelsHandler,
        }
        handlers = []
        for spec in super().init_handlers():
            if spec[1] in replacements:
                spec = (spec[0], replacements[spec[1]], *spec[2:])
            handlers.append(spec)
        return handlers

    def listen(self) -> None:
        """Put the Host guard in front of every route, then listen and run (Voila's ``listen``)."""
        guard = Rule(ForeignHostMatcher(frozenset(self.allowed_hosts)), ForeignHostHandler)
        self.app.default_router.rules.insert(0, guard)
        self.log.info(
            "Answering Host %s; at most %d kernels",
            ", ".join(["127.0.0.1", "localhost", "[::1]", *self.allowed_hosts]),
            self.kernel_manager.max_kernels,
        )
        super().listen()


def main(argv: list[str] | None = None) -> None:
    """``python -m explorer.server.voila_main``: like ``python -m voila``.

    Started by ``precision-explorer app`` (``$PX_LAUNCHER_PID`` set), it stops when the
    launcher dies (:func:`~explorer.server.process_tree.stop_with_launcher`) and then removes
    the launcher's ``px-voila-*`` directory (``$PX_LAUNCHER_DIR``), which the launcher, killed,
    could not.
    """
    launcher = os.environ.pop(LAUNCHER_ENV, "")
    work_dir = os.environ.pop(LAUNCHER_DIR_ENV, "")
    if launcher.isdigit():
        stop_with_launcher(int(launcher))
    try:
        WorkshopVoila.launch_instance(argv=argv)
    finally:
        orphaned = launcher.isdigit() and os.getppid() != int(launcher)
        if orphaned and Path(work_dir).name.startswith(LAUNCHER_DIR_PREFIX):
            shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
