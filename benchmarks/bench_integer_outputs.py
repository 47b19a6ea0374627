"""The ops with integer output (argmax, argmin, cast_to_int32, saturate_cast), run by every
installed backend in every format and mode (not torch.compile) for seeds 0-2, each judged
against its reference exactly (:func:`explorer.backends.silent.judge`).

    python -m benchmarks.bench_integer_outputs [BACKEND ...]

Prints the statuses per backend and every ``wrong_result`` cell with its reason.  XLA's flags
matter (JAX and TensorFlow's XLA): the figures are for the environment it runs in (``XLA_FLAGS``
as set, or unset).
"""

from __future__ import annotations

import os
import sys
from collections import Counter

#: the catalog's ops with integer output
INTEGER_OPS = ("argmax", "argmin", "cast_to_int32", "saturate_cast")


def main() -> None:
    """Run the cells and print the counts and the wrong results."""
    from explorer.backends import get_backend, installed_backends
    from explorer.formats import all_formats

    names = sys.argv[1:] or installed_backends()
    print(f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    counts: Counter[tuple[str, str]] = Counter()
    wrong = []
    for name in names:
        backend = get_backend(name)
        for fmt in all_formats():
            for op in INTEGER_OPS:
                for mode in (m for m in backend.modes if m != "compile"):
                    for seed in (0, 1, 2):
                        out = backend.run(op, fmt.name, mode=mode, seed=seed)
                        counts[(name, out.status.value)] += 1
                        if out.status.value == "wrong_result":
                            wrong.append(f"{name} {fmt.name} {op} {mode} seed {seed}: {out.detail}")
    for (name, status), n in sorted(counts.items()):
        print(f"{name:12} {status:18} {n}")
    print(f"wrong_result cells: {len(wrong)}")
    for line in wrong:
        print(line)


if __name__ == "__main__":
    main()
