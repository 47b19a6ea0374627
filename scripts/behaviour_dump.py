"""Dump what the CLI and the app answer for a fixed set of questions, to compare two trees.

Before and after a refactor that must not change behaviour:

    python scripts/behaviour_dump.py before/        # on the old tree
    python scripts/behaviour_dump.py after/         # on the new tree
    python scripts/behaviour_dump.py --compare before/ after/

Each CLI case is one ``python -m explorer ... --json`` run in a fresh cache directory; its
``environment`` and every timing field are left out.  Each tab of the app's default view
(``explorer.App(load_tensorflow=False)``) is dumped as the text of its widgets once it has
settled: HTML values, Output widgets' HTML and text, and a digest of every image.
``--compare`` prints each file that differs with a unified diff and exits 1 when any does; runs of
stack frames in explorer's own files that an error text quotes compare as one marker.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SEED_ERROR = (
    "NotFoundError: Could not find device for node: {{node Range}} = Range[Tidx=DT_HALF]\n"
    "All kernels registered for op Range:\n"
    "  device='CPU'; Tidx in [DT_INT64]\n"
    "  device='CPU'; Tidx in [DT_INT32]\n"
    "  device='CPU'; Tidx in [DT_DOUBLE]\n"
    "  device='CPU'; Tidx in [DT_FLOAT]\n"
)
TORCH_ERROR = "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'"

#: name -> the CLI's arguments (``--json`` is added); the README's commands, one case per verb and mode
CLI_CASES: dict[str, list[str]] = {
    "kernels_seed": ["kernels", "--op", "range", "--dtype", "float16", "--device", "CPU"],
    "kernels_registry_eager": [
        "kernels",
        "--op",
        "cholesky",
        "--dtype",
        "float16",
        "--dtype",
        "bfloat16",
        "--mode",
        "registry",
        "--mode",
        "eager",
    ],
    "kernels_raw_op": ["kernels", "--op", "Qr", "--mode", "registry"],
    "kernels_tf_xla": ["kernels", "--op", "exp", "--dtype", "float16", "--mode", "xla"],
    "kernels_torch_compile": [
        "kernels",
        "--backend",
        "torch",
        "--mode",
        "compile",
        "--op",
        "exp",
        "--dtype",
        "float16",
    ],
    "kernels_torch_eager": [
        "kernels",
        "--backend",
        "torch",
        "--op",
        "qr",
        "--dtype",
        "float16",
        "--dtype",
        "bfloat16",
    ],
    "kernels_jax": [
        "kernels",
        "--backend",
        "jax",
        "--mode",
        "eager",
        "--mode",
        "xla",
        "--op",
        "fft",
        "--dtype",
        "float16",
    ],
    "kernels_numpy_emulated": ["kernels", "--backend", "numpy", "--backend", "emulated", "--group", "linalg"],
    "kernels_history": ["kernels", "--op", "range", "--dtype", "float16", "--history"],
    "kernels_other_release": ["kernels", "--op", "Range", "--tf-version", "2.15.0", "--mode", "registry"],
    "explain_seed": ["explain", SEED_ERROR],
    "explain_torch_no_run": ["explain", "--no-run", TORCH_ERROR],
    "ranges_op": ["ranges", "--dtype", "float16", "--dtype", "bfloat16", "--op", "exp"],
    "ranges_line": ["ranges", "--dtype", "float8_e4m3fn"],
    "accuracy": [
        "accuracy",
        "--op",
        "tanh",
        "--dtype",
        "bfloat16",
        "--backend",
        "numpy",
        "--backend",
        "emulated",
    ],
    "bits": ["bits", "0.1", "--dtype", "float8_e4m3fn", "--dtype", "float16"],
    "formats": ["formats"],
    "train": [
        "train",
        "--policy",
        "float32",
        "--policy",
        "mixed_float16",
        "--scenario",
        "underflow",
        "--epochs",
        "2",
    ],
    "app_dry_run": ["app", "--dry-run"],
    "lab_dry_run": ["lab", "--dry-run"],
}

#: keys whose values are timings or depend on the moment or the temporary directory
VOLATILE_KEYS = {"environment", "seconds", "elapsed", "elapsed_s", "duration", "time", "wall_s", "cpu_s"}
VOLATILE_SUFFIXES = ("_seconds", "_time", "_ms")


def scrub(value: Any) -> Any:
    """``value`` without its volatile keys (recursively)."""
    if isinstance(value, dict):
        return {
            k: scrub(v)
            for k, v in value.items()
            if k not in VOLATILE_KEYS and not k.endswith(VOLATILE_SUFFIXES) and "seconds" not in k
        }
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def dump_cli(out: Path) -> None:
    for name, args in CLI_CASES.items():
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "PX_CACHE_DIR": cache}
            done = subprocess.run(
                [sys.executable, "-m", "explorer", *args, "--json"],
                capture_output=True, text=True, env=env, timeout=900, check=False,
            )  # fmt: skip
        try:
            body: Any = scrub(json.loads(done.stdout))
        except json.JSONDecodeError:
            body = {"stdout": done.stdout}
        record = {"args": args, "returncode": done.returncode, "stdout": body}
        (out / f"cli_{name}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"cli {name}: exit {done.returncode}", flush=True)


def widget_text(widget: Any) -> list[str]:
    """The text a widget tree shows, in order; images as a digest of their bytes."""
    lines: list[str] = []
    layout = getattr(widget, "layout", None)
    if layout is not None and getattr(layout, "display", None) == "none":
        return lines
    kind = type(widget).__name__
    for output in getattr(widget, "outputs", ()) or ():
        data = output.get("data", {})
        for mime in ("text/html", "text/plain"):
            if mime in data:
                lines.append(f"{kind} {mime}: {data[mime]}")
        if "image/png" in data:
            lines.append(
                f"{kind} image/png sha256 {hashlib.sha256(str(data['image/png']).encode()).hexdigest()}"
            )
        if "text" in output:
            lines.append(f"{kind} stream: {output['text']}")
    for attribute in ("description", "value", "placeholder", "options"):
        value = getattr(widget, attribute, None)
        if isinstance(value, bytes):
            lines.append(f"{kind}.{attribute} sha256 {hashlib.sha256(value).hexdigest()}")
        elif isinstance(value, str | int | float | tuple | bool) and value not in ("", ()):
            lines.append(f"{kind}.{attribute}: {value}")
    for child in getattr(widget, "children", ()) or ():
        lines.extend(widget_text(child))
    return lines


#: words a tab shows while it still computes
BUSY_WORDS = (
    "being asked of a worker process",
    "loading in the background",
    "fills in when it is ready",
    "working…",
)


def dump_app(out: Path) -> None:
    os.environ["PX_CACHE_DIR"] = tempfile.mkdtemp()
    import explorer

    app = explorer.App(load_tensorflow=False)
    (out / "app_preview.html").write_text(app.preview_html())
    for key in list(app.tabs):
        tab = app.select(key)
        app.ctx.background.wait(240)  # the tab's sweeps and worker questions
        text, deadline = None, time.monotonic() + 300
        while time.monotonic() < deadline:  # settled: the same text three polls running
            time.sleep(2)
            now = "\n".join(widget_text(tab.widget if hasattr(tab, "widget") else app.tabs.slots[key]))
            if now == text and not any(word in now.lower() for word in BUSY_WORDS):
                break
            text = now
        (out / f"app_{key}.txt").write_text((text or "") + "\n")
        print(f"app {key}: {len(text or '')} characters", flush=True)


#: a run of stack frames in explorer's own files, as TensorFlow quotes them in an error text:
#: where the code lives (files, lines, helper functions) is what a refactor changes, so a run of
#: them compares as one marker
#: pandas Styler's table id, random per render
STYLER_ID = re.compile(r"\bT_[0-9a-f]{5}(?=[_\"])")
OWN_FRAMES = re.compile(r'(?:File \\?"[^"\\]*/explorer/[^"\\]*\\?", line \d+, in \w+(?:\\n|\n))+')


def normalised(path: Path) -> str:
    text = path.read_text()
    if path.suffix == ".json":  # scrubbed again: a dump made by an older copy of this script
        text = json.dumps(scrub(json.loads(text)), indent=1, sort_keys=True) + "\n"
    return STYLER_ID.sub("T_id", OWN_FRAMES.sub("<explorer's frames>\\n", text))


def compare(before: Path, after: Path) -> int:
    names = sorted({p.name for p in before.iterdir()} | {p.name for p in after.iterdir()})
    differing = 0
    for name in names:
        a, b = before / name, after / name
        left = normalised(a).splitlines(keepends=True) if a.exists() else []
        right = normalised(b).splitlines(keepends=True) if b.exists() else []
        if left != right:
            differing += 1
            sys.stdout.writelines(difflib.unified_diff(left, right, str(a), str(b)))
    print(f"{len(names)} files compared, {differing} differ")
    return 1 if differing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--only", choices=("cli", "app"))
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("give a folder to dump into, or --compare BEFORE AFTER")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.only != "app":
        dump_cli(args.out)
    if args.only != "cli":
        dump_app(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
