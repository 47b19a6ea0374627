"""On a machine with an NVIDIA GPU: probe the catalog's availability on the GPU and time the speed
table there, for float32, float16, bfloat16 and float8, and write both as one kernel snapshot
into ``explorer/data/snapshots/`` (the schema of :mod:`explorer.analysis.snapshot_schema`: the
availability rows as rows, the speed rows and the hardware report in its ``environment``).

    python scripts/gpu_snapshot.py                          # whole catalog; speed: bench_speed's ops
    python scripts/gpu_snapshot.py --ops matmul,conv2d,exp  # fewer ops (a short lease)
    python scripts/gpu_snapshot.py --dry-run                # no GPU needed: CPU, one op, a temp file,
                                                            # loaded back through the snapshot reader

Exit status 0 written, 2 no GPU (without --dry-run) or bad options.  Prints what it does and
how long each step took; the snapshot's path last.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SNAPSHOTS = REPO / "explorer" / "data" / "snapshots"
DTYPES = ("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")
BACKENDS = ("tensorflow", "torch", "jax")
#: the ops the speed table times (as benchmarks/bench_speed.py)
SPEED_OPS = ("matmul", "conv2d", "exp", "sum", "softmax", "layer_norm")
#: the most speed rows kept in the snapshot's environment (its schema caps the values it holds)
MAX_SPEED_ROWS = 400


def main(argv: list[str] | None = None) -> int:
    """Probe, time, write; see the module's docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="comma-separated catalog ops to probe (default: the whole catalog)")
    parser.add_argument("--speed-budget", type=float, default=240.0, help="seconds for the speed table")
    parser.add_argument("--output", type=Path, help="the snapshot's path (default: explorer/data/snapshots/)")
    parser.add_argument("--dry-run", action="store_true", help="CPU, one op, a temporary file; no GPU needed")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(REPO))
    from explorer.queries.availability import availability
    from explorer.queries.hardware import hardware
    from explorer.queries.snapshot import load_snapshot, save_snapshot
    from explorer.queries.speed import speed

    start = time.perf_counter()
    report = hardware()
    gpus = report.gpus
    device = "CPU" if args.dry_run else "GPU"
    if not args.dry_run and not gpus:
        print("no NVIDIA GPU found (nvidia-smi, torch.cuda); --dry-run runs the script on CPU")
        return 2
    name = gpus[0]["name"] if gpus else "cpu-dry-run"
    print(f"device: {name} ({device}); hardware read in {time.perf_counter() - start:.1f} s", flush=True)

    ops = [o for o in (args.ops or "").split(",") if o] or None
    if args.dry_run:
        ops = ["exp"]
    step = time.perf_counter()
    probed = availability(
        ops=ops,
        dtypes=list(DTYPES),
        backends=list(BACKENDS),
        devices=[device],
        use_cache=False,
        progress=True,
    )
    print(f"availability: {len(probed.rows)} rows in {time.perf_counter() - step:.1f} s", flush=True)

    step = time.perf_counter()
    speed_ops = ["exp"] if args.dry_run else [o for o in SPEED_OPS if ops is None or o in ops]
    timed = speed(
        speed_ops,
        [d for d in DTYPES if d != "float32"],
        BACKENDS,
        ("eager", "xla", "compile") if not args.dry_run else ("eager",),
        device=device,
        budget=args.speed_budget if not args.dry_run else 60.0,
        min_time=0.05 if args.dry_run else 0.1,
        max_time=1.0,
    )
    print(f"speed: {timed.coverage()}", flush=True)

    probed.environment = {
        **probed.environment,
        "measured_on": name,
        "hardware": report.to_dict(),
        "speed": {
            "device": device,
            "coverage": timed.coverage(),
            "rows": [_plain(r.to_dict()) for r in timed.rows[:MAX_SPEED_ROWS]],
        },
    }
    if args.output is not None:
        target = args.output
    elif args.dry_run:
        target = Path(tempfile.mkdtemp(prefix="px-gpu-snapshot-")) / "dry-run.json"
    else:
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu"
        target = SNAPSHOTS / f"{slug}.json"
    path = save_snapshot(probed, target)
    loaded = load_snapshot(path)
    print(
        f"loaded back: {len(loaded.rows)} rows, {len(loaded.environment['speed']['rows'])} speed rows",
        flush=True,
    )
    print(f"({time.perf_counter() - start:.0f} s in all)")
    print(path)
    return 0


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """A speed row with its error cut to one line (the snapshot keeps environment texts short)."""
    error = str(row.get("error") or "")
    return {**row, "error": error.splitlines()[0][:500] if error else ""}


if __name__ == "__main__":
    sys.exit(main())
