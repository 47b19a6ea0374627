"""Capture the kernel registry of every TensorFlow release into explorer's package data.

For each release, in a throwaway venv (a temporary directory, removed afterwards):
``pip install tensorflow==X`` (pip picks the NumPy it wants), then ``_capture_worker.py``
reads the registry there with explorer's own reading code
(``explorer.backends.tensorflow_registry.read_registry_data``, loaded from the source by path).
One file per release, ``tensorflow-<release>.json.gz`` (gzip, compact JSON, sorted keys except
where the order is data: see :func:`canonical`), holds
what ``Registry(data)`` needs plus where it came from; ``index.json`` lists the files with
their sha256 and size, and the releases that could not be captured, with the reason.

Nothing is typed by hand: this script reproduces every file.  It is resumable: a release
whose file exists and verifies is skipped unless ``--force``.

    python scripts/capture_registries.py                       # every release pip lists
    python scripts/capture_registries.py --versions 2.15.1 2.21.0 --jobs 2
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

SOURCE_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(SOURCE_ROOT))

from explorer.backends.tensorflow_registry import DATA_VERSION  # noqa: E402
from explorer.formats import all_formats  # noqa: E402

#: bump when what this script writes changes (files of another version are captured again)
CAPTURE_SCRIPT_VERSION = 2
#: bump when the index's shape changes
INDEX_VERSION = 1
DEFAULT_OUT = SOURCE_ROOT / "explorer" / "data" / "registries"
WORKER = Path(__file__).resolve().parent / "_capture_worker.py"
OPS_INDEX = "ops-index.json.gz"
INSTALL_TIMEOUT_S = 3600
READ_TIMEOUT_S = 900
#: keys a release file must hold, and their types
FILE_SHAPE: dict[str, type] = {
    "data_version": int,
    "tf_version": str,
    "ops": dict,
    "kernels": dict,
    "float_dtypes": list,
    "labelled_kernels_ignored": int,
    "xla_error": str,
    "release": str,
    "captured": str,
    "python": str,
    "numpy": str,
    "capture_script_version": int,
}

_print_lock = threading.Lock()


def log(message: str) -> None:
    with _print_lock:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def file_name(release: str) -> str:
    return f"tensorflow-{release}.json.gz"


def listed_releases() -> list[str]:
    """Every TensorFlow release ``pip index versions`` lists for this Python, oldest first."""
    out = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", "tensorflow"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    match = re.search(r"^Available versions:\s*(.+)$", out, re.MULTILINE)
    if not match:
        raise SystemExit(f"cannot read the release list from `pip index versions tensorflow`:\n{out}")
    return sorted({v.strip() for v in match.group(1).split(",") if v.strip()}, key=Version)


def encode(record: dict[str, Any]) -> bytes:
    """The file's bytes: compact JSON in the record's own key order (see :func:`canonical`),
    gzip with no timestamp, so that the same registry gives the same bytes."""
    text = json.dumps(record, separators=(",", ":"), ensure_ascii=True)
    return gzip.compress(text.encode("ascii"), compresslevel=9, mtime=0)


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def canonical(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with every mapping's keys sorted, except each op's ``attrs``: they keep their
    OpDef order, which decides the data attribute (``Registry`` falls back on it); and each
    op's kernels sorted (their order is the registry's hash-map order; it means nothing)."""
    out = _sorted({key: value for key, value in data.items() if key not in ("ops", "kernels")})
    out["ops"] = {
        name: {
            key: {attr: _sorted(spec) for attr, spec in value.items()} if key == "attrs" else _sorted(value)
            for key, value in sorted(op.items())
        }
        for name, op in sorted(data["ops"].items())
    }
    out["kernels"] = {
        op: sorted(_sorted(kernels), key=json.dumps) for op, kernels in sorted(data["kernels"].items())
    }
    return dict(sorted(out.items()))


def read_file(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    return data


def verify(path: Path, release: str) -> str:
    """Why the file at ``path`` is not a valid, current capture of ``release`` ("" when it is)."""
    if not path.is_file():
        return "missing"
    try:
        data = read_file(path)
    except (OSError, EOFError, ValueError) as exc:
        return f"unreadable ({type(exc).__name__}: {exc})"
    for key, kind in FILE_SHAPE.items():
        if not isinstance(data.get(key), kind):
            return f"{key!r} missing or not {kind.__name__}"
    if data["release"] != release:
        return f"holds release {data['release']}, not {release}"
    if data["data_version"] != DATA_VERSION:
        return f"data_version {data['data_version']} (current: {DATA_VERSION})"
    if data["capture_script_version"] != CAPTURE_SCRIPT_VERSION:
        return f"capture_script_version {data['capture_script_version']} (current: {CAPTURE_SCRIPT_VERSION})"
    if not data["ops"] or not data["kernels"]:
        return "no ops or no kernels"
    return ""


class CaptureError(Exception):
    """A release that could not be captured: ``stage`` (venv, install, read) and the reason."""

    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(f"{stage}: {reason}")
        self.stage = stage
        self.reason = reason


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONNOUSERSITE"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _reason(output: str, lines: int = 6) -> str:
    """The telling lines of a failed command's output: its ERROR lines, else its last lines."""
    text = [line.rstrip() for line in output.splitlines() if line.strip()]
    errors = [line for line in text if line.startswith("ERROR") or "Error" in line]
    return " | ".join((errors or text)[-lines:])[:2000] or "(no output)"


def _run(stage: str, command: list[str], timeout: int, log_path: Path) -> None:
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env=_env(), stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as exc:
        raise CaptureError(stage, f"timed out after {timeout} s") from exc
    output = proc.stdout + proc.stderr
    log_path.write_text(output, encoding="utf-8")
    if proc.returncode != 0:
        raise CaptureError(stage, f"exit status {proc.returncode}: {_reason(output)}")


def _installed_numpy(python: Path) -> str:
    proc = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('numpy'))"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    return proc.stdout.strip() if proc.returncode == 0 else "0"


def capture(release: str, out: Path, cache_dir: Path) -> dict[str, Any]:
    """Install ``release`` in a throwaway venv, read its registry there, write its file; return its record."""
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix=f"px-capture-tf{release}-"))
    try:
        venv = tmp / "venv"
        log(f"{release}: creating venv in {tmp}")
        _run("venv", [sys.executable, "-m", "venv", str(venv)], 600, tmp / "venv.log")
        python = venv / "bin" / "python"
        log(f"{release}: pip install tensorflow=={release}")
        pip_install = [
            str(python),
            "-m",
            "pip",
            "install",
            "--no-compile",
            "--prefer-binary",
            "--progress-bar",
            "off",
            "--cache-dir",
            str(cache_dir),
            f"tensorflow=={release}",
        ]
        _run("install", pip_install, INSTALL_TIMEOUT_S, tmp / "install.log")
        log(f"{release}: installed in {time.monotonic() - start:.0f} s; reading the registry")
        formats_json = tmp / "formats.json"
        formats_json.write_text(json.dumps([[f.name, f.emulated] for f in all_formats()]))
        data_json = tmp / "registry.json"
        read = [str(python), str(WORKER), str(SOURCE_ROOT), str(formats_json), str(data_json)]
        note = ""
        try:
            _run("read", read, READ_TIMEOUT_S, tmp / "read.log")
        except CaptureError as first:
            # a release that does not cap NumPy (2.14.0: numpy>=1.23.5) gets NumPy 2, which its
            # extension modules were not built for: read it with the NumPy 1 it was released with
            numpy = _installed_numpy(python)
            if Version(numpy).major < 2:
                raise
            log(f"{release}: reading failed under NumPy {numpy} ({first.reason}); retrying with numpy<2")
            _run("install", [*pip_install, "numpy<2"], INSTALL_TIMEOUT_S, tmp / "install-numpy.log")
            _run("read", read, READ_TIMEOUT_S, tmp / "read.log")
            note = f"under the NumPy pip chose ({numpy}) reading failed: {first.reason}; read with numpy<2"
        data: dict[str, Any] = json.loads(data_json.read_text(encoding="utf-8"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    worker = data.pop("_worker")
    if Version(data["tf_version"]).base_version != Version(release).base_version:
        raise CaptureError("read", f"venv imported TensorFlow {data['tf_version']}, not {release}")
    data.update(
        release=release,
        captured=datetime.datetime.now(datetime.UTC).date().isoformat(),
        python=worker["python"],
        numpy=worker["numpy"],
        capture_script_version=CAPTURE_SCRIPT_VERSION,
    )
    if note:
        data["capture_note"] = note
    data = canonical(data)
    path = out / file_name(release)
    partial = path.with_suffix(".partial")
    partial.write_bytes(encode(data))
    problem = verify(partial, release)
    if problem:
        partial.unlink()
        raise CaptureError("write", f"the file written does not verify: {problem}")
    partial.replace(path)
    log(
        f"{release}: wrote {path.name} ({path.stat().st_size / 1024:.0f} KB, {len(data['ops'])} ops) "
        f"in {time.monotonic() - start:.0f} s"
    )
    return data


def build_ops_index(sources: dict[str, str], out: Path) -> dict[str, Any]:
    """The release files regrouped per op, for the history of one op without reading every file.

    ``ops``: op -> the JSON text of ``{"variants": [[op_def, kernels], ...], "releases":
    {release: variant number}}`` (identical definitions shared; kept as text so that loading
    the index parses only the ops asked for); ``release_facts``: per release, its TensorFlow
    version, float dtypes and device types (all that a Registry reads from the other ops);
    ``sources``: the sha256 of each release file it was built from.
    """
    per_op: dict[str, dict[str, Any]] = {}
    facts = {}
    for release in sorted(sources, key=Version):
        data = read_file(out / file_name(release))
        kernels = data["kernels"]
        facts[release] = {
            "tf_version": data["tf_version"],
            "float_dtypes": data["float_dtypes"],
            "device_types": sorted({d for ks in kernels.values() for d, _ in ks} - {"DEFAULT"}),
        }
        for op, op_def in data["ops"].items():
            variant = [op_def, kernels.get(op, [])]
            key = json.dumps(variant)  # the files are canonical: same definition, same text
            slot = per_op.setdefault(op, {"keys": {}, "variants": [], "releases": {}})
            if key not in slot["keys"]:
                slot["keys"][key] = len(slot["variants"])
                slot["variants"].append(variant)
            slot["releases"][release] = slot["keys"][key]
    ops = {
        op: json.dumps(
            {"releases": per_op[op]["releases"], "variants": per_op[op]["variants"]}, separators=(",", ":")
        )
        for op in sorted(per_op)
    }
    return {"index_version": INDEX_VERSION, "ops": ops, "release_facts": facts, "sources": sources}


def write_index(out: Path, failures: dict[str, dict[str, str]]) -> dict[str, Any]:
    """``index.json`` from the release files in ``out`` (each verified) and the failures."""
    releases = []
    for path in out.glob("tensorflow-*.json.gz"):
        release = path.name.removeprefix("tensorflow-").removesuffix(".json.gz")
        problem = verify(path, release)
        if problem:
            log(f"index: leaving out {path.name}: {problem}")
            continue
        data = read_file(path)
        body = path.read_bytes()
        releases.append(
            {
                "release": release,
                "tf_version": data["tf_version"],
                "file": path.name,
                "sha256": hashlib.sha256(body).hexdigest(),
                "bytes": len(body),
                "ops": len(data["ops"]),
                "captured": data["captured"],
                "python": data["python"],
                "numpy": data["numpy"],
                "float_dtypes": data["float_dtypes"],
                "xla_error": data["xla_error"],
                **({"capture_note": data["capture_note"]} if "capture_note" in data else {}),
            }
        )
    releases.sort(key=lambda r: Version(r["release"]))
    present = {r["release"] for r in releases}
    ops_index = encode(build_ops_index({r["release"]: r["sha256"] for r in releases}, out))
    (out / OPS_INDEX).write_bytes(ops_index)
    index = {
        "ops_index": {
            "file": OPS_INDEX,
            "sha256": hashlib.sha256(ops_index).hexdigest(),
            "bytes": len(ops_index),
        },
        "index_version": INDEX_VERSION,
        "data_version": DATA_VERSION,
        "capture_script_version": CAPTURE_SCRIPT_VERSION,
        "releases": releases,
        "failed": [
            {"release": release, **failures[release]}
            for release in sorted(failures, key=Version)
            if release not in present
        ],
    }
    (out / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return index


def previous_failures(out: Path) -> dict[str, dict[str, str]]:
    try:
        index = json.loads((out / "index.json").read_text(encoding="utf-8"))
        return {f["release"]: {"stage": f["stage"], "reason": f["reason"]} for f in index.get("failed", [])}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", nargs="+", metavar="X", help="releases to capture (default: every one)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder ({DEFAULT_OUT})")
    parser.add_argument("--jobs", type=int, default=1, help="releases captured at once (default 1)")
    parser.add_argument("--force", action="store_true", help="capture again releases whose file verifies")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        help="pip cache shared by the venvs (default: a temporary folder, removed at the end)",
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.versions:
        try:
            releases = sorted(set(args.versions), key=Version)
        except InvalidVersion as exc:
            parser.error(str(exc))
    else:
        releases = listed_releases()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    failures = previous_failures(out)
    todo = []
    for release in releases:
        problem = "forced" if args.force else verify(out / file_name(release), release)
        if problem:
            todo.append(release)
            log(f"{release}: to capture ({problem})")
        else:
            log(f"{release}: {file_name(release)} verifies; skipped")
    start = time.monotonic()
    cache_dir: Path = args.cache_dir or Path(tempfile.mkdtemp(prefix="px-capture-pip-cache-"))
    cache_dir.mkdir(parents=True, exist_ok=True)
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {pool.submit(capture, release, out, cache_dir): release for release in todo}
            for future in concurrent.futures.as_completed(futures):
                release = futures[future]
                try:
                    future.result()
                    failures.pop(release, None)
                except CaptureError as exc:
                    failures[release] = {"stage": exc.stage, "reason": exc.reason}
                    log(f"{release}: FAILED at {exc.stage}: {exc.reason}")
                write_index(out, failures)
    finally:
        if args.cache_dir is None:
            shutil.rmtree(cache_dir, ignore_errors=True)
    index = write_index(out, failures)
    total = sum(r["bytes"] for r in index["releases"])
    log(
        f"done in {time.monotonic() - start:.0f} s: {len(index['releases'])} releases in {out} "
        f"({total / 1024:.0f} KB), {len(index['failed'])} failed"
        + "".join(f"\n  {f['release']}: {f['stage']}: {f['reason']}" for f in index["failed"])
    )
    return 1 if any(r in failures for r in releases) else 0


if __name__ == "__main__":
    sys.exit(main())
