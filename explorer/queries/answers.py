"""One sentence that answers a selection in words: what each app tab says first.

Every sentence is computed from the same data the tab shows below it (TensorFlow's kernel
registry and the shipped registries of earlier releases for Kernels, the regions of the sweep
for Ranges, the error summaries for Accuracy); the functions only phrase it.

>>> print(kernels_answer("range", "float16", "CPU", "registry"))  # doctest: +NORMALIZE_WHITESPACE
Yes: TensorFlow 2.21.0 has a float16 CPU kernel for Range (tf.range), since 2.18.0; on 2.17.1
and earlier there is none, so the call fails — workaround: create in float32, then tf.cast to float16.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from explorer.backends.tensorflow_registry import Registry

#: how each mode is said after "kernel"
_MODE_WORDS = {"registry": "", "eager": "", "xla": " under XLA (jit_compile=True)"}


def _since(history: tuple[Any, ...]) -> tuple[str | None, str | None]:
    """``(since, before)``: the release from which every later shipped release declares a kernel,
    and the release just before it (None when every release has one or the latest has none)."""
    if not history or history[-1].status != "ok":
        return None, None
    index = len(history) - 1
    while index > 0 and history[index - 1].status == "ok":
        index -= 1
    if index == 0:
        return history[0].version, None
    return history[index].version, history[index - 1].version


def _last_ok(history: tuple[Any, ...]) -> str | None:
    return next((e.version for e in reversed(history) if e.status == "ok"), None)


def _workaround_words(op: str, dtype: str, reg: Registry, raws: tuple[str, ...], device_type: str) -> str:
    """ "create in float32, then tf.cast to float16" when the registry declares every raw op in
    float32 there (float64 for a float32 selection), else ""."""
    from explorer.ops import catalog

    entry = catalog().get(op)
    wide = "float64" if dtype == "float32" else "float32"
    if entry is None or dtype == "float64":
        return ""
    if any(reg.declared(raw, wide, device_type).value != "ok" for raw in raws):
        return ""
    verb = "create in" if entry.arity == 0 else "compute in"
    return f"{verb} {wide}, then tf.cast to {dtype}"


def kernels_answer(
    op: str,
    dtype: str,
    device: str,
    mode: str,
    registry: Registry | None = None,
    probed: str | None = None,
) -> str:
    """Whether TensorFlow (the installed release's registry) has a kernel for ``op`` in ``dtype``
    on ``device`` (``CPU``, ``GPU``) in ``mode``, since which shipped release, and the
    workaround for the releases (or the device) without one.  ``probed``: the status a probe
    of this cell recorded on this machine, said after the registry's answer.

    >>> print(kernels_answer("cholesky", "float16", "CPU", "registry"))  # doctest: +NORMALIZE_WHITESPACE
    No: TensorFlow 2.21.0 has no float16 CPU kernel for Cholesky (tf.linalg.cholesky), nor has any
    of the 19 shipped releases (2.12.0 to 2.21.0) — workaround: compute in float32, then tf.cast to float16.
    """
    from explorer.analysis import releases
    from explorer.backends.tensorflow_registry import REGISTRY_DEVICE, registry_device
    from explorer.ops import catalog
    from explorer.queries.history import cell_history, selected_raw_ops

    if registry is None:
        from explorer.runtime.registry import get_registry

        registry = get_registry()
    reg = registry
    version = reg.tf_version
    if (device, "xla" if mode == "xla" else "eager") not in REGISTRY_DEVICE or mode not in _MODE_WORDS:
        return f"TensorFlow has no mode {mode}: its answer is in the registry, eager and xla modes."
    if dtype not in reg.float_dtypes:
        return f"No: TensorFlow {version} has no {dtype} dtype, so no op runs in it."
    device_type = registry_device(device, "xla" if mode == "xla" else "eager")
    raws = tuple(r for r in selected_raw_ops(op) if reg.has_op(r))
    entry = catalog().get(op)
    if not raws:
        return f"No: TensorFlow {version} has no raw op for {op}."
    statuses = {raw: reg.declared(raw, dtype, device_type).value for raw in raws}
    worst = next((r for r in raws if statuses[r] == "unsupported_dtype"), None)
    worst = worst or next((r for r in raws if statuses[r] != "ok"), raws[0])
    named = worst + (f" ({entry.tf_public})" if entry is not None and entry.tf_public else "")
    where = f"{dtype} {device} kernel{_MODE_WORDS[mode]}"
    history: tuple[Any, ...] = ()
    if releases.known_op(worst) is not None:
        try:
            history = cell_history(worst, dtype, device_type).history
        except ValueError:  # a device type no shipped release has
            history = ()
    shipped = releases.shipped_releases()
    workaround = _workaround_words(op, dtype, reg, raws, device_type)
    if statuses[worst] == "ok":
        sentence = f"Yes: TensorFlow {version} has a {where} for {named}"
        since, before = _since(history)
        if before is not None:
            sentence += f", since {since}; on {before} and earlier there is none, so the call fails"
            if workaround:
                sentence += f" — workaround: {workaround}"
        elif since is not None:
            sentence += f", as has every shipped release since {since}"
    else:
        sentence = f"No: TensorFlow {version} has no {where} for {named}"
        if statuses[worst] == "unsupported_dtype":
            sentence += f" (its type list leaves {dtype} out)"
        last = _last_ok(history)
        if history and last is None:
            span = f"{shipped[0]} to {shipped[-1]}"
            sentence += f", nor has any of the {len(shipped)} shipped releases ({span})"
        elif last is not None:
            sentence += f"; the last shipped release with one is {last}"
        sentence += f" — workaround: {workaround}" if workaround else "; no float32 kernel there either"
    sentence += "."
    if probed is not None:
        sentence += f" Run here ({mode}): {probed}."
    elif mode != "registry":
        sentence += " That is declared; it has not been run on this machine yet (Probe now runs it)."
    return sentence


#: what an input of each region kind does, as a verb
_KIND_VERBS = {
    "overflow": "overflows",
    "underflow": "underflows to zero",
    "subnormal": "gives subnormals",
    "nan": "gives NaN",
    "flush_to_zero": "reads subnormal inputs as zero",
}


def ranges_answer(op: str, dtype: str, regions: Mapping[str, Any]) -> str:
    """Where ``op`` in ``dtype`` stops giving ordinary results, in the words of the first backend
    that ran (``regions``: backend -> its regions, :func:`explorer.queries.ranges.regions_from_sweep`).

    >>> from explorer.queries import ranges
    >>> s = ranges.sweep("exp", "float16", ["emulated"])
    >>> regions = {"emulated": ranges.regions_from_sweep(s, "emulated")}
    >>> ranges_answer("exp", "float16", regions)  # doctest: +ELLIPSIS
    'exp in float16 (emulated): overflows for x >= 11.09375; underflows to zero for x <= -17.34375; ...'
    """
    ran = [(name, r) for name, r in regions.items() if r.ran]
    if not ran:
        return f"No selected backend ran {op} in {dtype}."
    name, reg = ran[0]
    parts = []
    for kind, entry in reg.thresholds.items():
        sides = [entry[s]["rule"].split(" (")[0] for s in ("negative", "positive") if entry.get(s)]
        if entry.get("at_zero"):
            sides.append("x = 0")
        parts.append(f"{_KIND_VERBS.get(kind, kind.replace('_', ' '))} for {' and '.join(sides)}")
    if not parts:
        return f"{op} in {dtype} ({name}): every input gives an ordinary finite result."
    return f"{op} in {dtype} ({name}): {'; '.join(parts)}."


def accuracy_answer(op: str, dtype: str, summaries: list[Any]) -> str:
    """How far each backend that ran is from the correctly rounded result of ``op`` in ``dtype``
    (``summaries``: :class:`explorer.queries.accuracy.BackendAccuracy`), in ulp_steps."""
    ran = [b for b in summaries if b.max_ulp_steps is not None]
    if not ran:
        return f"No selected backend ran {op} in {dtype}."
    inputs = "every finite input" if ran[0].exhaustive else f"{ran[0].n_inputs:,} sampled inputs"
    words = []
    for b in ran:
        wrong = round(b.n_inputs * (1.0 - (b.correctly_rounded_fraction or 0.0)))
        if b.max_ulp_steps == 0:
            words.append(f"{b.backend} is correctly rounded on every one")
        else:
            steps = f"{b.max_ulp_steps:g} representable value{'' if b.max_ulp_steps == 1 else 's'}"
            words.append(f"{b.backend} is at most {steps} off ({wrong:,} not correctly rounded)")
    return f"{op} in {dtype}, over {inputs} ({ran[0].n_inputs:,}): " + "; ".join(words) + "."


__all__ = ["accuracy_answer", "kernels_answer", "ranges_answer"]
