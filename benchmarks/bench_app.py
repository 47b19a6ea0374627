"""The app's startup time and interaction latency.

    python -m benchmarks.run app

- startup: a fresh ``python`` runs ``import explorer; explorer.App()`` and asks the app
  for its display bundle (what the notebook renders): the time until the widgets can
  be displayed.  TensorFlow keeps loading in the background; the time until it is
  ready is reported apart.
- re-render latency: in one warm process (TensorFlow loaded, analysis results
  cached by a first pass), the dtype or op widget is set programmatically and the
  time until the selected tab has re-rendered (state updated, figure drawn and
  encoded, tables rebuilt) is measured.  "draw" figures clear the figure cache
  before every change, so each change really draws; "revisit" figures keep it
  (going back to a selection already shown).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from typing import Any

_STARTUP = """
import json, time
t0 = time.perf_counter()
import explorer
app = explorer.App()
bundle = app._repr_mimebundle_()
shown = time.perf_counter() - t0
assert "application/vnd.jupyter.widget-view+json" in bundle
app.ctx.tf_loader.wait(300)
print(json.dumps({"shown": shown, "tf_ready": time.perf_counter() - t0}))
"""

DTYPE_CYCLE = [("float16",), ("bfloat16",), ("float16", "bfloat16"), ("float32",), ("float16", "float32")]
OP_CYCLE = {
    "kernels": ["exp", "cholesky", "matmul", "range", "softmax"],
    "ranges": ["exp", "log", "square", "tanh", "sqrt"],
}


def startup(repeats: int = 3) -> dict[str, float]:
    """Median seconds until App() can be displayed, and until TensorFlow is ready, in fresh processes."""
    runs = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", _STARTUP],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
            env={"TF_CPP_MIN_LOG_LEVEL": "2", **_env()},
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in runs) for k in ("shown", "tf_ready")}


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def _latency(app: Any, tab: str, widget: Any, values: list[Any], repeats: int, draw: bool) -> float:
    """Median ms from setting ``widget.value`` to the tab having re-rendered."""
    app.select(tab)
    for v in values:  # warm: analysis results computed and cached
        widget.value = v
    times = []
    for _ in range(repeats):
        for v in values:
            if draw:
                app.ctx.figures.clear()
            if widget.value == v:
                continue
            start = time.perf_counter()
            widget.value = v
            times.append(time.perf_counter() - start)
            assert app.tabs[tab].last_render_seconds is not None
    return 1000 * statistics.median(times)


def interaction(repeats: int = 4) -> dict[str, float]:
    """Median re-render latencies (ms) of the Kernels and Ranges tabs, drawn and revisited."""
    import explorer

    app = explorer.App(backends=["tensorflow", "numpy", "emulated"])
    app.ctx.tf_loader.wait(300)
    while app.tabs["kernels"].dirty:
        time.sleep(0.05)
    out = {}
    for tab in ("kernels", "ranges"):
        app.state.set(op=OP_CYCLE[tab][0], dtypes=DTYPE_CYCLE[0])
        for draw in (True, False):
            label = "draw" if draw else "revisit"
            out[f"{tab}_dtype_{label}"] = _latency(app, tab, app.controls.dtypes, DTYPE_CYCLE, repeats, draw)
            app.state.set(dtypes=("float16",))
            out[f"{tab}_op_{label}"] = _latency(app, tab, app.controls.op, OP_CYCLE[tab], repeats, draw)
    return out


def run() -> list[tuple[str, float, str]]:
    """Figures for benchmarks/run.py."""
    s = startup()
    rows = [
        ("app startup: widgets displayable after import + App()", s["shown"], "s"),
        ("app startup: TensorFlow ready in the background", s["tf_ready"], "s"),
    ]
    for name, ms in interaction().items():
        tab, what, label = name.split("_")
        rows.append((f"{tab} re-render when {what} changes, median ({label})", ms, "ms"))
    return rows


if __name__ == "__main__":
    for name, value, unit in run():
        print(f"{name:<60} {value:>10.4g} {unit}")
