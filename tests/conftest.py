"""Shared test settings and fixtures, in one place.

* ``cache_dir``: the test's own explorer cache directory (``PX_CACHE_DIR``), nothing read from
  or written to the user's; a module takes it for every test with
  ``pytestmark = pytest.mark.usefixtures("cache_dir")``;
* ``browser``: Debian's Chromium through Playwright, one per module (skips without it, fails in
  CI: :mod:`tests.support.require`);
* ``voila_server``: a fresh Voila serving the app, one per module (:mod:`tests.support.voila`).

Helpers the tests share are modules of :mod:`tests.support`, imported by name.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from explorer.runtime.probe import DEFAULT_PROBE_XLA_FLAGS

# TensorFlow's C++ log lines are noise in test output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# XLA compiles under the flags the app's probe workers use (LLVM optimisation off, elemental
# emitters; explorer.runtime.probe.DEFAULT_PROBE_XLA_FLAGS), in the test process and in every
# process it starts, so the tests check what the probes run.  `XLA_FLAGS= python -m pytest`
# runs them under the frameworks' own defaults.
os.environ.setdefault("XLA_FLAGS", DEFAULT_PROBE_XLA_FLAGS)


#: a module setting this to True hands its app probe workers (TensorFlow, Keras, JAX: each a
#: cold framework import) on to the next module when that one sets it too
SHARES_APP_PROBE_WORKERS = "SHARES_APP_PROBE_WORKERS"


def _next_module(request: pytest.FixtureRequest) -> Any:
    """The module object of the first collected test after the requesting module's tests, or None."""
    items = request.session.items
    mine = [i for i, item in enumerate(items) if item.getparent(pytest.Module) is request.node]
    later = items[mine[-1] + 1 :] if mine else []
    node = later[0].getparent(pytest.Module) if later else None
    return getattr(node, "obj", None)


@pytest.fixture(autouse=True, scope="module")
def _app_probe_workers_stopped_after_each_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """The app's probe sandbox (Probe now, pasted errors' workarounds) holds one of the machine's
    worker slots while its workers live; stopping them after each module leaves the slots to the
    processes the next modules start (Voila kernels, CLI runs), as a visitor's idle release would.
    Two neighbouring modules that both set :data:`SHARES_APP_PROBE_WORKERS` keep them between
    them (``explain``'s two modules run the same workers)."""
    yield
    from explorer.runtime.probe import app_probe_sandbox

    following = _next_module(request)
    if getattr(getattr(request.node, "obj", None), SHARES_APP_PROBE_WORKERS, False) and getattr(
        following, SHARES_APP_PROBE_WORKERS, False
    ):
        return
    app_probe_sandbox().close()


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``PX_CACHE_DIR`` set to a fresh ``cache`` folder of the test's (not created); returns it."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("PX_CACHE_DIR", str(directory))
    return directory


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Chromium (its profile under a temporary HOME), closed after the module."""
    from tests.support.browser import launch, require_browser

    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = launch(p, tmp_path_factory.mktemp("chromium-home"))
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def voila_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Voila serving notebooks/explorer.ipynb as ``precision-explorer app`` does (offline template,
    first view), with a training queue of its own: runs elsewhere on the machine take none of its
    slots.  A :class:`tests.support.voila.VoilaServer`, stopped with all its kernels after the module."""
    from explorer.training.queue import DIR_ENV as TRAINING_QUEUE_DIR
    from tests.support.voila import running_voila

    tmp = tmp_path_factory.mktemp("voila")
    with running_voila(tmp, env={TRAINING_QUEUE_DIR: str(tmp / "queue")}) as server:
        yield server


@pytest.fixture(scope="module")
def app_page(browser: Any, voila_server: Any) -> Iterator[Any]:
    """One visitor's page of the module's Voila server (one kernel for the module) at the first
    story viewport, the app loaded and its Kernels view ready; closed after the module."""
    from tests.support import page as bs

    page = browser.new_page(viewport=bs.STORY_VIEWPORTS[0])
    try:
        page.goto(voila_server.url, timeout=bs.STORY_LOAD_MS)
        page.wait_for_selector(".px-app", timeout=bs.STORY_LOAD_MS)
        page.wait_for_function(bs.KERNELS_VIEW_READY, timeout=bs.STORY_LOAD_MS)
        yield page
    finally:
        page.close(run_before_unload=True)
