"""Would compiling many ops in one XLA module speed up JAX's XLA probes?  Measured, not built.

    python -m benchmarks.bench_jax_xla_batching [--dtypes float16,float8_e4m3fn] [--batch 16]

For each dtype, in one process under the probe workers' XLA flags, each way once, CPU seconds:

- **one by one**: ``Backend.run(op, dtype, mode="xla")`` for every catalog op JAX has a call
  for, as the probes run them (``jax.jit`` of the op, compiled and run, the result judged for
  silent wrong results);
- **batched**: every op's jitted call traced alone (a failure there is left to the one-by-one
  run, which says why), then ``--batch`` traced ops at a time in one ``jax.jit`` that returns
  all their results (one lowering, one XLA compilation, one run), a failing batch split in
  halves down to single ops (those left to the one-by-one run), and each result judged as
  ``Backend.run`` judges it.

The two orders run in separate processes (``--way``), so neither warms the other's caches.
Both ways report how many ops ran and how many were judged ``wrong_result``; "batched" counts
only the ops it ran together, and its time includes the one-by-one runs of the ops it left.

Measurements: ``benchmarks/results/jax_xla_batching.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

from explorer.runtime.probe import DEFAULT_PROBE_XLA_FLAGS


def one_by_one(dtype: str) -> dict[str, Any]:
    from explorer.backends import get_backend
    from explorer.backends.jax_backend import jax_call
    from explorer.ops import catalog, get_op

    backend = get_backend("jax")
    names = [n for n in catalog() if jax_call(get_op(n)) is not None]
    start = time.process_time()
    statuses = [backend.run(name, dtype, mode="xla").status.value for name in names]
    return {
        "cpu_s": time.process_time() - start,
        "ran": sum(s in ("ok", "fallback", "wrong_result") for s in statuses),
        "wrong_result": statuses.count("wrong_result"),
    }


def batched(dtype: str, batch: int) -> dict[str, Any]:
    import numpy as np

    from explorer.backends import get_backend
    from explorer.backends.jax_backend import _function, import_jax, jax_call
    from explorer.backends.silent import held_in, judge
    from explorer.formats import resolve
    from explorer.ops import catalog, get_op
    from explorer.outcome import Outcome, Status

    jax = import_jax()
    fmt = resolve(dtype)
    backend = get_backend("jax")
    ops = [get_op(n) for n in catalog() if jax_call(get_op(n)) is not None]
    start = time.process_time()
    compilations = 0
    left: list[str] = []
    results: dict[str, Any] = {}
    with jax.enable_x64(True):
        traced = []
        for op in ops:
            inputs = op.inputs(0)
            try:
                arrays = [jax.device_put(held_in(fmt, x).astype(fmt.storage_dtype)) for x in inputs]
                fn = _function(op.name, fmt.name, True)
                fn.trace(*arrays)
                traced.append((op, inputs, fn, arrays))
            except Exception:
                left.append(op.name)

        def together(group: list[Any]) -> None:
            nonlocal compilations
            sizes = [len(g[3]) for g in group]

            def combined(*flat: Any) -> tuple[Any, ...]:
                outs, at = [], 0
                for (_, _, fn, _), k in zip(group, sizes, strict=True):
                    outs.append(fn(*flat[at : at + k]))
                    at += k
                return tuple(outs)

            compilations += 1
            try:
                outs = jax.block_until_ready(jax.jit(combined)(*[a for g in group for a in g[3]]))
            except Exception:
                if len(group) == 1:
                    left.append(group[0][0].name)
                    return
                together(group[: len(group) // 2])
                together(group[len(group) // 2 :])
                return
            for (op, inputs, _, _), out in zip(group, outs, strict=True):
                results[op.name] = judge(Outcome(Status.OK, np.asarray(out)), op, inputs, fmt)

        for at in range(0, len(traced), batch):
            together(traced[at : at + batch])
    for name in left:
        backend.run(name, dtype, mode="xla")
    return {
        "cpu_s": time.process_time() - start,
        "ran": len(results),
        "wrong_result": sum(o.status is Status.WRONG_RESULT for o in results.values()),
        "compilations": compilations,
        "left_to_one_by_one": len(left),
    }


def measure(way: str, dtype: str, batch: int) -> dict[str, Any]:
    """``way`` for ``dtype`` in a fresh process (after one warm-up run of another op)."""
    code = (
        "import json; import benchmarks.bench_jax_xla_batching as b; "
        "from explorer.backends import get_backend; get_backend('jax').run('exp', 'float32', mode='xla'); "
        f"r = b.one_by_one({dtype!r}) if {way!r} == 'one_by_one' else b.batched({dtype!r}, {batch}); "
        "print(json.dumps(r))"
    )
    env = dict(os.environ, XLA_FLAGS=os.environ.get("XLA_FLAGS", DEFAULT_PROBE_XLA_FLAGS))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default="float32,float16,float8_e4m3fn")
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args()
    for dtype in args.dtypes.split(","):
        single = measure("one_by_one", dtype, args.batch)
        together = measure("batched", dtype, args.batch)
        print(
            f"{dtype}: one by one {single['cpu_s']:.2f} CPU s ({single['ran']} ran, "
            f"{single['wrong_result']} wrong_result); batched by {args.batch}: {together['cpu_s']:.2f} CPU s "
            f"({together['ran']} ran together in {together['compilations']} compilations, "
            f"{together['wrong_result']} wrong_result, {together['left_to_one_by_one']} left to one by one); "
            f"ratio {together['cpu_s'] / single['cpu_s']:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
