"""The shipped JupyterHub deployment (deploy/jupyterhub/jupyterhub_config.py), run for real.

The hub starts on loopback with free ports and all its state in a temporary directory
(deploy/jupyterhub/hub_session.py), overriding only ports, directories and culling times
through the environment variables the config documents.  Two attendees log in through the
hub's login form in Chromium (one browser context each) and must each land on their own
working app at /user/<name>/voila/render/explorer.ipynb, where choosing another op redraws
the Kernels view; one cannot open the other's app or API; leaving the page shuts its kernel
down; the per-process data limit is on the server and its kernel (/proc/PID/limits); bad
logins get no server; and the idle-culler service stops the server nobody uses any more
(its process is gone from /proc, the culler says so in the log).  The hub's state, the
users' directories, TMPDIR and Chromium's HOME all live in pytest's temporary directories.

Without configurable-http-proxy (npm), JupyterHub, Playwright or Chromium the tests that need
them skip, and fail in CI (tests/support/require.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deploy.jupyterhub import hub_session
from tests.support.browser import keep_local
from tests.support.page import select_op
from tests.support.require import require_command, require_module

APP_PATH = "voila/render/explorer.ipynb"
#: The hub's culler for this test: servers idle this long are stopped (checked every few seconds).
CULL_TIMEOUT_S = 30
CULL_EVERY_S = 5
ACTIVITY_INTERVAL_S = 5
#: What the config's default PX_HUB_MEM_LIMIT (2G, JupyterHub's binary units) sets RLIMIT_DATA to.
DEFAULT_DATA_LIMIT = str(2 * 1024**3)
PAGE_TIMEOUT_MS = 120_000
#: Two servers start at once, then each renders the app: longer than one page's timeout.
APP_TIMEOUT_MS = 240_000


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str, log: Callable[[], str]) -> None:
    """Poll ``condition`` every 0.5 s; fail with ``what`` and the hub log's tail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} (after {timeout_s} s); hub log tail:\n{log()[-4000:]}")
        time.sleep(0.5)


def start_login(browser: Any, hub: Any, user: str, external: list[str]) -> tuple[Any, Any]:
    """A fresh browser context for ``user``, logged in (the hub now starts the server); (context, page)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    keep_local(page, external)
    hub_session.log_in(page, hub, user)
    return context, page


def wait_for_app(page: Any, hub: Any, user: str) -> None:
    """Until the app shows on ``user``'s own server, at the default URL the config gives."""
    page.wait_for_selector(".px-app", timeout=APP_TIMEOUT_MS)
    assert page.url == f"{hub.url}user/{user}/{APP_PATH}", page.url
    assert page.locator(".px-first-view").count() == 1, "the page has no server-written first view"


def kernels_view(page: Any) -> str:
    """What the Kernels tab's plot area shows (its HTML: an image or a table of cells)."""
    return str(page.eval_on_selector(".px-kernels-plot", "el => el.innerHTML"))


def change_op(page: Any) -> str:
    """Choose an op of another group than the default ``range``; returns the Kernels view before."""
    page.wait_for_function(
        "() => { const e = document.querySelector('.px-kernels-plot'); return e !== null && "
        "e.querySelector('img, table, svg, div') !== null; }",
        timeout=PAGE_TIMEOUT_MS,
    )
    before = kernels_view(page)
    select_op(page, "matmul")
    return before


def see_kernels_view_change(page: Any, before: str) -> None:
    """Until the Kernels view differs from ``before`` (the kernel redrew it for the new op)."""
    page.wait_for_function(
        "before => { const e = document.querySelector('.px-kernels-plot');"
        " return e !== null && e.innerHTML !== before && e.innerHTML.length > 0; }",
        arg=before,
        timeout=PAGE_TIMEOUT_MS,
    )
    assert kernels_view(page) != before


def check_server_process(hub: Any, user: str) -> int:
    """The user's server runs in their own directory, with the app copied in, under the data limit."""
    server = hub.server_pid(user)
    assert server is not None, f"no single-user server process for {user}"
    assert os.readlink(f"/proc/{server}/cwd") == str(hub.users_dir / user)
    assert (hub.users_dir / user / "explorer.ipynb").is_file()
    kernels = hub.kernel_pids(user)
    assert len(kernels) == 1, f"{user} should have one kernel (one page), has {kernels}"
    for pid in (server, *kernels):
        assert hub_session.data_limit(pid) == DEFAULT_DATA_LIMIT, f"RLIMIT_DATA of {pid}"
    return server


def leave_page(page: Any, hub: Any, user: str) -> None:
    """Navigate away: Voila's shutdown beacon must stop the page's kernel (xsrf cookie accepted)."""
    page.unroute("**/*")  # an intercepted beacon would die with the page
    page.goto("about:blank")
    wait_until(
        lambda: hub.kernel_pids(user) == [], 30, f"{user}'s kernel still runs after leaving", hub.log_text
    )


def check_isolation(intruder_page: Any, owner_page: Any, hub: Any, owner: str) -> None:
    """The intruder gets neither the owner's app nor the owner's Jupyter API; the owner does."""
    kernels_before = hub.kernel_pids(owner)
    answer = intruder_page.goto(f"{hub.url}user/{owner}/{APP_PATH}", timeout=60_000)
    assert answer is not None and answer.status in (403, 404), (answer and answer.status, intruder_page.url)
    assert intruder_page.query_selector(".px-app") is None
    api = intruder_page.request.get(f"{hub.url}user/{owner}/api/contents", max_redirects=0)
    assert api.status == 403, api.status
    own = owner_page.request.get(f"{hub.url}user/{owner}/api/contents")
    assert own.status == 200 and "explorer.ipynb" in own.text(), (own.status, own.text()[:300])
    assert hub.kernel_pids(owner) == kernels_before, "the intruder's visit started a kernel"


def check_rejected_logins(browser: Any, hub: Any) -> None:
    """A wrong password, and a user name that would escape the users' directory, get no server."""
    context = browser.new_context()
    try:
        page = context.new_page()
        for user, password in (("mallory", "not-the-password"), ("../escape", hub.password)):
            hub_session.log_in(page, hub, user, password)
            page.wait_for_selector(".login_error", timeout=60_000)
            assert "Invalid username or password" in page.inner_text(".login_error")
            assert hub.server_pid(user) is None
        assert not (hub.users_dir.parent / "escape").exists()
        assert not (hub.users_dir / "mallory").exists()
    finally:
        context.close()


@pytest.mark.slow
@pytest.mark.browser
def test_each_attendee_gets_their_own_app_and_idle_servers_are_culled(browser: Any, tmp_path: Path) -> None:
    require_module("jupyterhub")
    require_command(hub_session.PROXY, hub_session.PROXY_INSTALL)
    overrides = {
        "PX_HUB_CULL_TIMEOUT": str(CULL_TIMEOUT_S),
        "PX_HUB_CULL_EVERY": str(CULL_EVERY_S),
        "PX_HUB_ACTIVITY_INTERVAL": str(ACTIVITY_INTERVAL_S),
    }
    external: list[str] = []
    with hub_session.running_hub(tmp_path, overrides) as hub:
        assert hub.culler_pids(), "the idle-culler service is not running"
        # both attendees log in at once; their servers start while the bad logins are tried
        alice, alice_page = start_login(browser, hub, "alice", external)
        bob, bob_page = start_login(browser, hub, "bob", external)
        check_rejected_logins(browser, hub)

        wait_for_app(alice_page, hub, "alice")
        memory = hub.user_memory_kib("alice")
        print(
            f"\nalice's server and the processes under it, app shown: "
            f"RSS {memory['rss_total_kib'] / 1024:.0f} MiB, PSS {memory['pss_total_kib'] / 1024:.0f} MiB "
            f"(TensorFlow {'loaded' if memory['tensorflow_loaded'] else 'not loaded'})"
        )
        wait_for_app(bob_page, hub, "bob")
        assert check_server_process(hub, "alice") != check_server_process(hub, "bob")
        alice_before, bob_before = change_op(alice_page), change_op(bob_page)  # both kernels at work
        see_kernels_view_change(alice_page, alice_before)
        see_kernels_view_change(bob_page, bob_before)
        leave_page(alice_page, hub, "alice")  # from now on nobody uses alice's server
        check_isolation(alice_page, bob_page, hub, "bob")
        assert not external, f"pages fetched from outside 127.0.0.1: {external}"

        # alice's idle server is stopped by the culler service
        wait_until(
            lambda: hub.server_pid("alice") is None,
            CULL_TIMEOUT_S + 4 * CULL_EVERY_S + 2 * ACTIVITY_INTERVAL_S + 30,
            "alice's idle server was not culled",
            hub.log_text,
        )
        assert "Culling server alice " in hub.log_text(), "the culler did not report stopping alice's server"
        bob_page.close(run_before_unload=True)
        alice.close()
        bob.close()


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_config_refuses_to_load_without_a_password_or_as_root_unasked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The config file, loaded as JupyterHub loads it (traitlets), stops with a message that says why."""
    require_module("jupyterhub")
    from traitlets.config.loader import PyFileConfigLoader

    env, _ = hub_session.hub_environment(tmp_path, {})
    for name, value in env.items():
        if name.startswith("PX_HUB_"):
            monkeypatch.setenv(name, value)
    cases: list[tuple[str, str, type[Exception], str]] = [
        ("PX_HUB_PASSWORD", "short", ValueError, "PX_HUB_PASSWORD")
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cases.append(("PX_HUB_ALLOW_ROOT", "0", RuntimeError, "refusing to run as root"))
    for name, value, error, message in cases:
        with monkeypatch.context() as patch:
            patch.setenv(name, value)
            loader = PyFileConfigLoader(hub_session.CONFIG.name, path=str(hub_session.CONFIG.parent))
            with pytest.raises(error, match=message):
                loader.load_config()
