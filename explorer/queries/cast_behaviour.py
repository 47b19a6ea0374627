"""What each installed backend's cast to a format does beyond the format's range, and where the
backends disagree.

The format table (:attr:`~explorer.formats.Format.overflow`) says what a format reserves for an
overflow; a framework's cast need not do that: PyTorch's cast to ``float8_e4m3fn`` saturates to
448 where ml_dtypes gives NaN, and ONNX's ``Cast`` saturates every float8 format by default.
Each backend's behaviour is measured by casting (:mod:`explorer.backends.cast_behaviour`), where
the range sweeps run that backend (:mod:`explorer.runtime.cast_measure`: TensorFlow in its worker,
the others here): ``cast_behaviours(
["float8_e4m3fn"], backends=["emulated"])`` gives one row whose ``above_max`` and ``inf`` are
``nan`` (``tests/test_cast_behaviour.py`` runs it, beside torch's ``saturate``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from explorer.runtime.sandbox import Sandbox

#: the columns of a row, in the order the CLI prints them
COLUMNS: tuple[str, ...] = (
    "format",
    "backend",
    "version",
    "above_max",
    "inf",
    "below_subnormal",
    "gives",
    "note",
)
#: what each word of a row means, for the views
WORDS: dict[str, str] = {
    "inf": "infinity",
    "nan": "NaN",
    "saturate": "the largest finite value (saturates)",
    "mixed": "some values one thing, some another",
    "round": "rounded to nearest (0, or the smallest subnormal)",
    "flush": "0, and the smallest subnormal itself 0 too (subnormals flushed)",
    "other": "neither rounded nor flushed (see the values)",
}


def cast_behaviours(
    formats: list[str], backends: list[str] | None = None, sandbox: Sandbox | None = None
) -> list[dict[str, Any]]:
    """One row per format × installed backend with a cast to it: ``format``, ``backend``,
    ``version``, ``above_max``, ``inf``, ``below_subnormal`` (the words of
    :class:`~explorer.backends.cast_behaviour.CastBehaviour`), ``note``, ``inputs``, ``outputs``.
    ``backends`` defaults to every installed backend; names are checked first."""
    from explorer.backends import get_backend, installed_backends
    from explorer.formats import resolve
    from explorer.runtime.cast_measure import in_worker, measured

    names = [resolve(f).name for f in formats]
    chosen = [get_backend(b).name for b in backends] if backends is not None else installed_backends()
    remote = [b for b in chosen if sandbox is not None or in_worker(b)]
    with ThreadPoolExecutor(max_workers=max(1, len(remote))) as pool:  # the workers at once
        each = dict(zip(remote, pool.map(lambda b: measured(b, names, sandbox), remote), strict=True))
    each.update({b: measured(b, names) for b in chosen if b not in each})  # here, one by one
    rows = []
    for name in names:
        for backend in chosen:
            found = each[backend][name]
            if found is not None:
                rows.append({**found, "gives": gives(found)})
    return rows


def gives(row: dict[str, Any]) -> str:
    """What the values above max and inf came back as: ``"472 -> 448, ..., inf -> 448"``.

    >>> gives({"inputs": [472.0, float("inf"), 1e-3], "outputs": [448.0, float("nan"), 0.0],
    ...        "format": "float8_e4m3fn"})
    '472 -> 448, inf -> nan'
    """
    from explorer.formats import resolve

    top = resolve(row["format"]).max
    return ", ".join(
        f"{x:.6g} -> {y:.6g}" for x, y in zip(row["inputs"], row["outputs"], strict=True) if x > top
    )


def measured_in_workers(backends: list[str] | tuple[str, ...], fmt: str) -> bool:
    """Whether measuring ``backends``' casts to ``fmt`` waits for a worker process (the view
    should not wait): some backend is measured in a worker, and was not measured yet.

    >>> measured_in_workers(["numpy", "emulated"], "float16")
    False
    """
    from explorer.runtime.cast_measure import in_worker, known

    return any(in_worker(b) and not known(b, fmt) for b in backends)


def disagreement(rows: list[dict[str, Any]], fmt: str) -> str:
    """Where the backends' casts to ``fmt`` (among ``rows``) differ, in words; ``""`` when they agree.

    >>> rows = [{"format": "f", "backend": "torch", "above_max": "saturate", "inf": "saturate",
    ...          "below_subnormal": "round"},
    ...         {"format": "f", "backend": "emulated", "above_max": "nan", "inf": "nan",
    ...          "below_subnormal": "round"}]
    >>> disagreement(rows, "f")[:66]
    'f: backends disagree above max (nan: emulated; saturate: torch) an'
    """
    mine = [r for r in rows if r["format"] == fmt]
    parts = []
    for key, what in (
        ("above_max", "above max"),
        ("inf", "for inf"),
        ("below_subnormal", "below the smallest subnormal"),
    ):
        by_word: dict[str, list[str]] = {}
        for r in mine:
            by_word.setdefault(r[key], []).append(r["backend"])
        if len(by_word) > 1:
            said = "; ".join(f"{w}: {', '.join(sorted(b))}" for w, b in sorted(by_word.items()))
            parts.append(f"{what} ({said})")
    return f"{fmt}: backends disagree " + " and ".join(parts) if parts else ""
