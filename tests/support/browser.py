"""The real browser of the tests and benchmarks: Debian's Chromium driven by Playwright, and axe-core.

* :data:`CHROMIUM` (``$PX_CHROMIUM``, default ``/usr/bin/chromium``) and :data:`CHROMIUM_ARGS`,
  the one list of its flags; :func:`launch_options` / :func:`launch` start it headless, sync or
  async (``p.chromium.launch(**launch_options())``); never ``playwright install``: nothing is
  downloaded;
* :func:`missing_browser` says what is missing, :func:`require_browser` skips or fails a test
  on it (:mod:`tests.support.require`);
* :func:`keep_local`: a page that may reach 127.0.0.1 only;
* :func:`axe_path` / :func:`axe_source` / :func:`run_axe`: axe-core (npm, ``npm install -g
  axe-core``) injected into the page, run with the WCAG 2 A/AA rules; violations by impact.

Nothing here imports explorer, Playwright or pytest at import time.

>>> "--no-sandbox" in CHROMIUM_ARGS and "--disable-gpu" in CHROMIUM_ARGS
True
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Debian's Chromium (apt-get install chromium)
CHROMIUM = os.environ.get("PX_CHROMIUM", "/usr/bin/chromium")
#: Chromium's flags, for every test and benchmark: no sandbox (root in a container), no GPU, no
#: QUIC, and none of its own network traffic (updates, sync), so a page's requests are its own
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
#: WCAG rules the accessibility check runs (axe-core tags)
AXE_TAGS = ("wcag2a", "wcag2aa")
#: impacts that fail the accessibility check
BLOCKING_IMPACTS = ("serious", "critical")


# ------------------------------------------------------------------------------------------ Chromium


def missing_browser() -> str:
    """What is missing to drive the browser ("" when nothing): Playwright, or Chromium."""
    from tests.support.require import INSTALL, has_module

    if not has_module("playwright"):
        return f"playwright is not installed ({INSTALL['playwright']})"
    if not Path(CHROMIUM).exists():
        return f"chromium not found at {CHROMIUM} (apt-get install chromium, or set PX_CHROMIUM)"
    return ""


def require_browser() -> None:
    """Skip the test when Playwright or Chromium is missing; fail it in CI."""
    from tests.support.require import require

    missing = missing_browser()
    require(not missing, missing)


def launch_options(home: Path | None = None) -> dict[str, Any]:
    """Keyword arguments of ``playwright.chromium.launch`` (sync or async API): Debian's Chromium,
    headless, :data:`CHROMIUM_ARGS`; with ``home``, its profile files go there (``HOME``)."""
    options: dict[str, Any] = {"executable_path": CHROMIUM, "headless": True, "args": list(CHROMIUM_ARGS)}
    if home is not None:
        env = {**os.environ, "HOME": str(home)}
        for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
            env.pop(name, None)
        options["env"] = env
    return options


def launch(playwright: Any, home: Path | None = None) -> Any:
    """Chromium from a sync Playwright (``with sync_playwright() as p: launch(p)``)."""
    return playwright.chromium.launch(**launch_options(home))


def keep_local(page: Any, external: list[str]) -> None:
    """Let ``page`` reach 127.0.0.1 only; every other URL it asks for is refused and noted in ``external``."""

    def route(r: Any) -> None:
        if r.request.url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:")):
            r.continue_()
        else:
            external.append(r.request.url)
            r.abort()

    page.route("**/*", route)


# ------------------------------------------------------------------------------------------ axe


def axe_path() -> Path | None:
    """``axe.min.js``: ``$PX_AXE`` if set, else under ``$(npm root -g)/axe-core/``; None if absent."""
    named = os.environ.get("PX_AXE")
    if named:
        return Path(named) if Path(named).is_file() else None
    npm = shutil.which("npm")
    if npm is None:
        return None
    try:
        root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    path = Path(root.stdout.strip()) / "axe-core" / "axe.min.js"
    return path if path.is_file() else None


def axe_source() -> str:
    """The text of axe.min.js; a test without it skips, or fails in CI (:mod:`tests.support.require`)."""
    from tests.support.require import require

    path = axe_path()
    require(path is not None, "axe-core not found (npm install -g axe-core, or set PX_AXE to axe.min.js)")
    assert path is not None
    return path.read_text(encoding="utf-8")


@dataclass(frozen=True)
class AxeViolation:
    """One axe rule that failed, with the elements it failed on."""

    id: str
    impact: str
    help: str
    nodes: int
    targets: tuple[str, ...]

    def line(self) -> str:
        """``serious  color-contrast (4 nodes): ... e.g. .px-key span``."""
        where = ", ".join(self.targets[:3])
        return f"{self.impact:<9} {self.id} ({self.nodes} nodes): {self.help}; e.g. {where}"


def run_axe(page: Any, source: str, selector: str = ".px-app") -> list[AxeViolation]:
    """Inject axe-core into ``page`` (once) and run it on ``selector`` (the whole document when no
    element matches) with :data:`AXE_TAGS`; returns the violations, most severe first."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=source)
    raw = page.evaluate(
        """async ([selector, tags]) => {
            const el = document.querySelector(selector);
            const result = await window.axe.run(el || document, {
                runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
            return result.violations.map(v => ({
                id: v.id, impact: v.impact || 'unknown', help: v.help,
                targets: v.nodes.map(n => n.target.join(' ')).slice(0, 20), nodes: v.nodes.length}));
        }""",
        [selector, list(AXE_TAGS)],
    )
    order = {"critical": 0, "serious": 1, "moderate": 2, "minor": 3}
    found = [AxeViolation(v["id"], v["impact"], v["help"], int(v["nodes"]), tuple(v["targets"])) for v in raw]
    return sorted(found, key=lambda v: (order.get(v.impact, 9), v.id))


def by_impact(violations: list[AxeViolation]) -> dict[str, list[AxeViolation]]:
    """Violations grouped by impact (``critical``, ``serious``, ``moderate``, ``minor``)."""
    out: dict[str, list[AxeViolation]] = {}
    for v in violations:
        out.setdefault(v.impact, []).append(v)
    return out


def blocking(violations: list[AxeViolation]) -> list[AxeViolation]:
    """The violations of :data:`BLOCKING_IMPACTS`."""
    return [v for v in violations if v.impact in BLOCKING_IMPACTS]
