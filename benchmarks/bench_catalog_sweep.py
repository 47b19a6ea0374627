"""The whole-catalog sweep as a user runs it: ``precision-explorer kernels --no-cache --save FILE``.

    python benchmarks/bench_catalog_sweep.py                  # cold, then warm, once each
    python benchmarks/bench_catalog_sweep.py --backend tensorflow --backend numpy --backend emulated
        # the three backends of issue 40's figure: the cold sweep over ``import tensorflow``
    python benchmarks/bench_catalog_sweep.py --repeat 2 --keep cold.json
    python benchmarks/bench_catalog_sweep.py --backend tensorflow --backend numpy --backend emulated
    python benchmarks/bench_catalog_sweep.py --compare before.json after.json  # cell by cell
    python benchmarks/bench_catalog_sweep.py --prove-lowering # TF XLA: lowering vs compiling
    python benchmarks/bench_catalog_sweep.py --prove-flags jax             # probe XLA flags vs JAX's
    python benchmarks/bench_catalog_sweep.py --prove-flags tensorflow --as-probed \
        --flags "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"

Cold = a fresh process and an empty cache directory (a new temporary ``PX_CACHE_DIR``:
no probe records, no registry cache, TensorFlow imported in fresh workers).  Warm = a
second fresh process on the same cache directory without ``--no-cache`` (every probe
record read from the store).  Printed: wall seconds and the CPU seconds of the
processes it started, rows, rows per mode and per status, and the cold sweep's wall and CPU
seconds over those of ``python -c "import tensorflow"`` timed before and after it (the ratio
issue 40 asks to keep at or under 2.6).  Timings are wall-clock on
a shared machine: compare figures measured back to back, and the CPU seconds, which
other load changes less.

Measurements, with their commits and machines: ``benchmarks/results/catalog_sweep.md``.

``--prove-lowering`` runs every XLA cell of the catalog (every op x TensorFlow float dtype,
on each device present) both ways, lowered to HLO only (``PX_PROBE_XLA_EXECUTE=0``) and
compiled and run (what the probes do), and prints every cell whose status, phase, result dtype
or error differs.

``--prove-flags BACKEND`` probes every cell of the backend (every op x dtype x mode on CPU, with
workarounds) in fresh processes at the same time: under ``--baseline`` XLA flags and under
``--flags``, XLA cells compiled and run, and under ``--flags`` as the probes take them; it prints
every record that differs (status, phase, result dtype, device, first error line, detail,
workaround).

``--compare BEFORE AFTER`` compares two saved snapshots cell by cell (status, phase, result
dtype, device, first error line, detail, declared, disagreement, explanation, workaround).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


def sweep(cache_dir: str, save: Path, cold: bool, backends: Sequence[str] = ()) -> tuple[float, float]:
    """Wall and CPU seconds ``precision-explorer kernels [--no-cache] [--backend B ...] --save save``
    takes in a fresh process (CPU: that process and the sandbox workers it started)."""
    command = [sys.executable, "-m", "explorer", "kernels", "--save", str(save)]
    command += [arg for backend in backends for arg in ("--backend", backend)]
    if cold:
        command.insert(4, "--no-cache")
    env = dict(os.environ, PX_CACHE_DIR=cache_dir)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_tensorflow_seconds() -> tuple[float, float]:
    """Wall and CPU seconds of ``python -c "import tensorflow"`` in a fresh process: the unit the
    cold sweep is measured in (issue 40: at most 2.6 times this, measured in the same run)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import tensorflow"], check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def counts(save: Path) -> dict[str, Any]:
    """Rows, and rows per mode and per (mode, status), of a saved snapshot."""
    rows = json.loads(save.read_text())["rows"]
    return {
        "rows": len(rows),
        "modes": dict(collections.Counter(r["mode"] for r in rows)),
        "statuses": dict(sorted(collections.Counter(f"{r['mode']}:{r['status']}" for r in rows).items())),
    }


def run() -> list[tuple[str, float, str]]:
    """Figures for ``benchmarks/run.py``: one cold and one warm sweep."""
    with tempfile.TemporaryDirectory() as tmp:
        save = Path(tmp) / "sweep.json"
        cache = str(Path(tmp) / "cache")
        cold, cold_cpu = sweep(cache, save, cold=True)
        warm, warm_cpu = sweep(cache, save, cold=False)
        facts = counts(save)
    figures = [
        ("kernels --no-cache --save, whole catalog, cold", cold, "s"),
        ("  CPU seconds (all processes)", cold_cpu, "s"),
        ("kernels --save, whole catalog, warm (from the store)", warm, "s"),
        ("  CPU seconds (all processes)", warm_cpu, "s"),
        ("  rows", float(facts["rows"]), "rows"),
    ]
    figures += [(f"  rows in mode {m}", float(n), "rows") for m, n in facts["modes"].items()]
    return figures


def lowering_mismatches(devices: tuple[str, ...] | None = None) -> tuple[int, list[str]]:
    """Every XLA cell of the catalog run both ways, here: lowered to HLO only, and compiled and
    run.  Returns the number of cells and a line for each whose status, phase, result dtype or
    first error line differs (the fallback device and its detail are compared too)."""
    from explorer.runtime.probe import probe_xla_flags

    os.environ.setdefault("XLA_FLAGS", probe_xla_flags())  # as in the probe workers
    from explorer.backends import get_backend
    from explorer.ops import catalog
    from explorer.runtime.registry import get_registry

    backend = get_backend("tensorflow")
    cells, mismatches = 0, []
    for device in devices or tuple(backend.devices()):
        for op in catalog():
            for dtype in get_registry().float_dtypes:
                lowered = backend.run(op, dtype, device=device, mode="xla", execute=False)
                ran = backend.run(op, dtype, device=device, mode="xla", execute=True)
                cells += 1
                a, b = _summary(lowered), _summary(ran)
                if a != b:
                    mismatches.append(f"{op} {dtype} {device}: lowered {a} | compiled and run {b}")
    return cells, mismatches


def _summary(outcome: Any) -> tuple[str, str, str | None, str, str | None]:
    """What an XLA probe's record says about a cell (the lowering's own detail left out)."""
    from explorer.backends.tensorflow_backend import LOWERED

    dtype = None if outcome.result is None else str(outcome.result.dtype)
    if outcome.ran and dtype is None:  # lowered: the dtype the traced function returns
        dtype = outcome.extra.get("result_dtype")
    detail = "; ".join(d for d in outcome.detail.split("; ") if d != LOWERED) if outcome.ran else ""
    error = re.sub(r"(__inference_\w+?)_\d+", r"\1_N", outcome.error_first_line)  # a counter per trace
    return outcome.status.value, outcome.phase.value, dtype, error, detail or None


#: the TensorFlow probe workers' XLA flags before issue 9 item 8 (``--prove-flags tensorflow``'s baseline)
OLD_TF_PROBE_FLAGS = "--xla_backend_optimization_level=0"
#: what a record says about a cell, compared by ``--prove-flags`` (timings and the note that a
#: cell was lowered only are left out)
RECORD_FIELDS = (
    "status",
    "phase",
    "result_dtype",
    "ran_on",
    "error",
    "detail",
    "workaround",
    "workaround_how",
    "workaround_failures",
)


def sweep_cells(
    backend: str, modes: Any = None, dtypes: Any = None, execute: bool | None = None
) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Every cell of ``backend`` in the default sweep (every catalog op x TensorFlow's float
    dtypes, or ``dtypes``, x every mode it has but ``compile``, or ``modes``, on CPU), probed here
    one after another as a probe worker probes it (TensorFlow's with the registry's kernel
    places); yields ``(probe, record)``.  ``execute``: as :func:`probe_record`'s."""
    from explorer.analysis.availability_rows import DEFAULT_AVAILABILITY_MODES
    from explorer.backends import get_backend
    from explorer.ops import catalog
    from explorer.queries.availability_probes import _kernel_places, probes_for
    from explorer.runtime.probe import probe_record
    from explorer.runtime.registry import get_registry

    reg = get_registry()
    present = get_backend(backend).devices()
    modes = modes or DEFAULT_AVAILABILITY_MODES
    for p in probes_for(list(catalog()), dtypes or reg.float_dtypes, [backend], ["CPU"], modes):
        places = _kernel_places(reg, p) if backend == "tensorflow" else []
        yield p, probe_record(p, 0, present, places, execute=execute)


def backend_records(backend: str, path: Path, execute: bool) -> None:
    """Worker side of ``--prove-flags``: the probe record of every cell of ``backend`` in the default
    sweep (:func:`sweep_cells`), XLA cells compiled and run (``execute``) or as the probes take
    them (lowered where proven); written to ``path`` as JSON (key -> fields)."""
    if backend == "tensorflow":
        from explorer.runtime.probe import _without_keras

        _without_keras()  # as in the probe workers
    start = time.perf_counter()
    out = {}
    for p, record in sweep_cells(backend, execute=True if execute else None):
        out[p.key] = {f: _comparable(f, record[f]) for f in RECORD_FIELDS}
    seconds = time.perf_counter() - start
    path.write_text(json.dumps({"records": out, "seconds": seconds, "cpu": time.process_time()}))


def _comparable(field: str, value: Any) -> Any:
    """A record field as compared: errors by their first line, and (in every text) memory
    addresses, source locations (``file.py:line:column``) and JAX's per-trace counters masked;
    the lowered-only notes left out."""
    from explorer.backends import jax_backend, tensorflow_backend

    if not isinstance(value, str):
        return value
    if field == "error":
        value = value.splitlines()[0] if value else ""
    if field == "detail":
        lowered = (jax_backend.LOWERED, tensorflow_backend.LOWERED)
        value = "; ".join(d for d in value.split("; ") if d and d not in lowered)
    value = re.sub(r"0x[0-9a-f]+", "0x_", value)
    value = re.sub(r"[\w/.-]+\.py:\d+:\d+", "FILE:LINE", value)  # a source location moves with the source
    return re.sub(r"(jit_\w+?|__inference_\w+?)_\d+", r"\1_N", value)


def prove_flags(backend: str, flags: str, baseline: str, execute: bool = True) -> int:
    """Every cell of ``backend`` probed in fresh processes, at the same time: under ``baseline`` XLA
    flags and under ``flags``, XLA cells compiled and run (``execute``; else both as the probes
    take them), and (``execute``) under ``flags`` as the probes take them (XLA cells lowered where
    proven).  Prints every cell whose record differs (the flags' effect, then the lowering's);
    returns the number of differences."""
    runs = {"baseline": (baseline, execute), "flags": (flags, execute)}
    if execute:
        runs["probes"] = (flags, False)
    found: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        procs = {}
        for name, (xla_flags, run_all) in runs.items():
            path = Path(tmp) / f"{name}.json"
            env = dict(os.environ, XLA_FLAGS=xla_flags, PX_CACHE_DIR=str(Path(tmp) / f"cache-{name}"))
            command = [sys.executable, __file__, "--records", backend, str(path)]
            procs[name] = (subprocess.Popen([*command, *([] if run_all else ["--as-probed"])], env=env), path)
        for name, (proc, path) in procs.items():
            if proc.wait() != 0:
                raise SystemExit(f"the {name} run failed (exit {proc.returncode})")
            found[name] = json.loads(path.read_text())
    differences = 0
    pairs = [("flags", "baseline", "flags")] + ([("lowering", "flags", "probes")] if execute else [])
    for label, a, b in pairs:
        left, right = found[a]["records"], found[b]["records"]
        lines = [
            f"  {key}: {a} {left[key]} | {b} {right.get(key)}" for key in left if left[key] != right.get(key)
        ]
        lines += [f"  {key}: only in {b}" for key in right if key not in left]
        differences += len(lines)
        print(f"{label}: {len(left)} {backend} cells, {len(lines)} differ ({a} vs {b})")
        print("\n".join(lines[:200]))
    for name, (xla_flags, run_all) in runs.items():
        how = "compiled and run" if run_all else "as probed"
        print(
            f"  {name}: XLA_FLAGS={xla_flags!r}, {how}: {found[name]['seconds']:.1f} s "
            f"({found[name]['cpu']:.1f} CPU s in the process)"
        )
    return differences


#: the columns of a saved snapshot that ``--compare`` holds equal, cell by cell
SNAPSHOT_FIELDS = (
    "status",
    "phase",
    "result_dtype",
    "ran_on",
    "error",
    "detail",
    "declared",
    "disagreement",
    "explanation",
    "workaround",
    "workaround_how",
)


def snapshot_differences(before: Path, after: Path) -> tuple[int, list[str]]:
    """Two saved snapshots compared cell by cell (backend, op, raw op, dtype, device, mode): the
    number of cells of ``before``, and a line for every cell missing from either or whose
    :data:`SNAPSHOT_FIELDS` differ (errors by their first line, counters and addresses masked)."""

    def cells(path: Path) -> dict[tuple[str, ...], dict[str, Any]]:
        rows = json.loads(path.read_text())["rows"]
        out = {}
        for r in rows:
            key = tuple(str(r[k]) for k in ("backend", "op", "raw_op", "dtype", "device", "mode"))
            out[key] = {f: _comparable(f, r.get(f)) for f in SNAPSHOT_FIELDS}
        if len(out) != len(rows):
            raise SystemExit(f"{path}: {len(rows) - len(out)} rows repeat a cell")
        return out

    a, b = cells(before), cells(after)
    lines = [f"only in {before.name}: {' '.join(k)}" for k in a if k not in b]
    lines += [f"only in {after.name}: {' '.join(k)}" for k in b if k not in a]
    for key in a.keys() & b.keys():
        for f in SNAPSHOT_FIELDS:
            if a[key][f] != b[key][f]:
                lines.append(f"{' '.join(key)}: {f}: {a[key][f]!r} | {b[key][f]!r}")
    return len(a), sorted(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="cold/warm pairs to run (default 1)")
    parser.add_argument(
        "--backend",
        action="append",
        default=[],
        metavar="NAME",
        help="sweep only these backends (repeatable; default: all, as the CLI)",
    )
    parser.add_argument(
        "--prove-lowering", action="store_true", help="compare XLA lowering with compiling, every cell"
    )
    parser.add_argument(
        "--prove-flags",
        metavar="BACKEND",
        choices=("jax", "tensorflow"),
        help="compare every cell's record under --baseline and --flags XLA flags (and, with XLA cells "
        "compiled and run, with the probes' lowering)",
    )
    parser.add_argument(
        "--flags", default=None, help="--prove-flags: the flags to prove (default: the probes')"
    )
    parser.add_argument(
        "--baseline",
        default=None,
        help="--prove-flags: the flags to compare with (default: JAX's own, none; for TensorFlow "
        f"{OLD_TF_PROBE_FLAGS!r}, its probe flags before issue 9 item 8)",
    )
    parser.add_argument(
        "--as-probed",
        action="store_true",
        help="--prove-flags: take XLA cells as the probes do, not compiled",
    )
    parser.add_argument(
        "--records", nargs=2, metavar=("BACKEND", "PATH"), help=argparse.SUPPRESS
    )  # worker side
    parser.add_argument(
        "--keep", type=Path, metavar="FILE", help="copy the (last) cold sweep's snapshot to FILE"
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        type=Path,
        metavar=("BEFORE", "AFTER"),
        help="compare two saved snapshots, cell by cell",
    )
    args = parser.parse_args()
    if args.compare is not None:
        cells, lines = snapshot_differences(*args.compare)
        print(f"{cells} cells, {len(lines)} differences")
        print("\n".join(f"  {line}" for line in lines[:300]))
        return
    if args.records is not None:
        backend_records(args.records[0], Path(args.records[1]), execute=not args.as_probed)
        return
    if args.prove_flags:
        from explorer.runtime.probe import probe_xla_flags

        backend = args.prove_flags
        os.environ.pop("PX_PROBE_XLA_FLAGS", None)
        flags = args.flags if args.flags is not None else probe_xla_flags()
        baseline = (
            args.baseline
            if args.baseline is not None
            else {"jax": "", "tensorflow": OLD_TF_PROBE_FLAGS}[backend]
        )
        start = time.perf_counter()
        differences = prove_flags(backend, flags, baseline, execute=not args.as_probed)
        print(f"{differences} differences ({time.perf_counter() - start:.0f} s)")
        return
    if args.prove_lowering:
        start = time.perf_counter()
        cells, mismatches = lowering_mismatches()
        print(f"{cells} XLA cells, {len(mismatches)} mismatches ({time.perf_counter() - start:.0f} s)")
        for line in mismatches:
            print(f"  {line}")
        return
    for attempt in range(args.repeat):
        load = os.getloadavg()
        tf_before = import_tensorflow_seconds()
        with tempfile.TemporaryDirectory() as tmp:
            save = Path(tmp) / "sweep.json"
            cache = str(Path(tmp) / "cache")
            cold, cold_cpu = sweep(cache, save, cold=True, backends=args.backend)
            if args.keep is not None:
                shutil.copyfile(save, args.keep)
            tf_after = import_tensorflow_seconds()
            warm, warm_cpu = sweep(cache, save, cold=False, backends=args.backend)
            facts = counts(save)
        tf_wall, tf_cpu = (tf_before[0] + tf_after[0]) / 2, (tf_before[1] + tf_after[1]) / 2
        print(
            f"run {attempt + 1}: cold {cold:.1f} s ({cold_cpu:.1f} CPU s), "
            f"warm {warm:.1f} s ({warm_cpu:.1f} CPU s), {facts['rows']} rows"
        )
        print(
            f"  python -c 'import tensorflow' (before and after the cold sweep, mean): {tf_wall:.1f} s "
            f"({tf_cpu:.1f} CPU s); cold sweep / import: {cold / tf_wall:.2f}x wall, "
            f"{cold_cpu / tf_cpu:.2f}x CPU; load average {load[0]:.1f} before, "
            f"{os.getloadavg()[0]:.1f} after"
        )
        print(f"  rows per mode: {facts['modes']}")
        print(f"  rows per mode:status: {facts['statuses']}")


if __name__ == "__main__":
    main()
