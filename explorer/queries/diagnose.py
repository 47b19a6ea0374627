"""Explain an error text: what it says, what the shipped releases and the installed one say, and a fix.

:func:`diagnose` reads the text with :func:`explorer.analysis.error_text.parse_error` and adds,
for TensorFlow, the installed release's registry (:func:`explorer.runtime.registry.get_registry`),
the history of the op × dtype × device over the shipped releases
(:mod:`explorer.analysis.releases`), which shipped releases list exactly the kernels the message
lists (the message is evidence of the user's release), and a workaround: code computing the op in
float32 and casting back (or running it outside XLA), run in a sandbox worker before it is
offered.  For PyTorch and JAX the workaround is plain code with the op's public call, run only
where the framework is installed.  Every sentence of the explanation is built from these facts.

>>> d = diagnose("Could not find device for node: {{node Range}} = Range[Tidx=DT_HALF]", run_workaround=False)
>>> d["op"], d["dtype"], d["device"], d["first_release_with_kernel"]
('range', 'float16', 'CPU', '2.18.0')
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from typing import Any

from explorer.analysis.error_text import ParsedError, looked_for, parse_error

#: registry device types a history can be asked for
_HISTORY_DEVICES = ("CPU", "GPU", "XLA_CPU_JIT", "XLA_GPU_JIT")
#: seconds a workaround may run in its sandbox worker
WORKAROUND_TIMEOUT = 120.0
_FRAMEWORK_WORDS = {"tensorflow": "TensorFlow", "torch": "PyTorch", "jax": "JAX"}
_PACKAGES = {"tensorflow": "tensorflow", "torch": "torch", "jax": "jax"}
#: the kinds of TensorFlow error that mean "no kernel for this dtype on this device"
_NO_KERNEL_KINDS = ("no_kernel_for_device", "no_opkernel_registered", "no_registered_kernel")
#: the kinds that mean "the op's signature does not take this dtype"
_SIGNATURE_KINDS = ("attr_not_allowed", "param_not_allowed")


def _join(items: list[str]) -> str:
    """``["a", "b", "c"]`` -> ``"a, b and c"``."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _count(n: int, noun: str) -> str:
    """``_count(1, "difference")`` -> ``"1 difference"``; plural otherwise."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _span(versions: list[str]) -> str:
    return f"{versions[0]} to {versions[-1]}" if len(versions) > 1 else "".join(versions)


# ---------------------------------------------------------------- running code


def run_code(code: str) -> str:
    """Run workaround ``code`` (it sets ``result``) and return the dtype name of its result.

    Top-level so that a sandbox worker can run it.

    >>> run_code("import numpy as np\\nresult = np.ones(2, np.float16)")
    'float16'
    """
    from explorer.runtime.workarounds import execute_workaround, result_dtype

    result = execute_workaround(code)
    dtype = getattr(result, "dtype", None)
    if dtype is not None and str(dtype).startswith("torch."):
        return str(dtype).removeprefix("torch.")
    return result_dtype(result)


def _run_in_sandbox(framework: str, code: str) -> tuple[str | None, str]:
    """(result dtype, "") when ``code`` ran in the framework's worker, else (None, why).

    The worker is one of :func:`~explorer.runtime.probe.app_probe_sandbox`'s: it starts only
    under one of the machine's worker slots (waiting up to the workaround's timeout for one), so
    a room of visitors pasting errors starts no more framework workers than the slots allow."""
    from explorer.runtime.probe import app_probe_sandbox, warm_worker
    from explorer.runtime.sandbox import SandboxError

    try:
        with app_probe_sandbox().held(WORKAROUND_TIMEOUT) as box:
            key = warm_worker(box, "tensorflow") if framework == "tensorflow" else f"explain-{framework}"
            return str(box.call(key, run_code, code, timeout=WORKAROUND_TIMEOUT)), ""
    except SandboxError as exc:
        return None, str(exc).splitlines()[0]
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return None, f"{type(exc).__name__}: {first}"[:300]


def framework_version(framework: str) -> str | None:
    """The installed version of a framework's package (metadata only, nothing imported), or None.

    >>> framework_version("no-such-framework") is None
    True
    """
    package = _PACKAGES.get(framework, framework)
    if importlib.util.find_spec(package) is None:
        return None
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


# ---------------------------------------------------------------- TensorFlow facts


def _canonical_raw_op(raw_op: str | None) -> str | None:
    """The raw op as the shipped releases spell it (``Conv2d`` -> ``Conv2D``), or None."""
    from explorer.analysis import releases

    if not raw_op:
        return None
    known = getattr(releases, "known_op", None)
    if known is not None:
        found: str | None = known(raw_op)
        return found
    reg = releases.release_registry(releases.shipped_releases()[-1])
    return reg.op(raw_op).name if reg.has_op(raw_op) else None


def _release_kernels(version: str, raw_op: str) -> list[tuple[str, dict[str, list[str]]]] | None:
    """Kernels (device type, constraints) shipped release ``version`` registers for ``raw_op``
    (None: the release has no such op).  Reads the per-op index where releases has one."""
    from explorer.analysis import releases

    per_op = getattr(releases, "_op_registry", None)  # one small file instead of every release
    reg = per_op(version, raw_op) if per_op is not None else releases.release_registry(version)
    if reg is None or not reg.has_op(raw_op):
        return None
    return [(device, dict(constraints)) for device, constraints in reg.data["kernels"].get(raw_op, [])]


def kernel_set(
    kernels: list[tuple[str, dict[str, list[str]]]], attr: str | None, devices: set[str]
) -> set[str]:
    """``device:dtype`` for each kernel on ``devices`` and each dtype its constraint on ``attr``
    lists (``device:*`` for a kernel that does not constrain it): what two kernel lists are
    compared by.

    >>> sorted(kernel_set([("CPU", {"T": ["float32", "int32"]}), ("GPU", {})], "T", {"CPU", "GPU"}))
    ['CPU:float32', 'CPU:int32', 'GPU:*']
    """
    out: set[str] = set()
    for device, constraints in kernels:
        if device not in devices:
            continue
        values = (
            constraints.get(attr, ["*"]) if attr else [t for v in constraints.values() for t in v] or ["*"]
        )
        out.update(f"{device}:{v}" for v in values)
    return out


def matching_releases(parsed: ParsedError, raw_op: str | None) -> dict[str, Any] | None:
    """Which shipped releases register exactly the kernels the message lists for its op, on the
    devices the message lists; otherwise the closest (fewest differences).  None when the message
    lists no kernels.

    >>> from explorer.analysis.error_text import parse_error
    >>> p = parse_error("Could not find device for node: {{node Range}} = Range[Tidx=DT_HALF]\\n"
    ...                 "All kernels registered for op Range:\\n  device='CPU'; Tidx in [DT_FLOAT]")
    >>> matching_releases(p, "Range")["exact"]
    []
    """
    from explorer.analysis import releases

    if not parsed.listed_kernels or not raw_op:
        return None
    devices = {device for device, _ in parsed.listed_kernels}
    listed = kernel_set(list(parsed.listed_kernels), parsed.attr, devices)
    compared: list[tuple[int, str, set[str]]] = []
    for version in releases.shipped_releases():
        kernels = _release_kernels(version, raw_op)
        if kernels is None:
            continue
        shipped = kernel_set(kernels, parsed.attr, devices)
        compared.append((len(listed ^ shipped), version, shipped))
    if not compared:
        return {"exact": [], "closest": [], "differences": None, "devices": sorted(devices), "compared": 0}
    fewest = min(n for n, _, _ in compared)
    closest = [(v, s) for n, v, s in compared if n == fewest]
    first_closest = closest[0][1]
    return {
        "exact": [v for v, _ in closest] if fewest == 0 else [],
        "closest": [v for v, _ in closest],
        "differences": fewest,
        "only_in_message": sorted(listed - first_closest),
        "only_in_closest": sorted(first_closest - listed),
        "devices": sorted(devices),
        "compared": len(compared),
    }


def _history_device(parsed: ParsedError) -> tuple[str | None, str]:
    """The registry device type to follow through the releases, and a note when it is assumed."""
    if parsed.device in _HISTORY_DEVICES:
        return parsed.device, ""
    if parsed.device is not None:
        return None, f"no shipped release has kernels for device type {parsed.device}"
    assumed = "XLA_CPU_JIT" if parsed.mode == "xla" else "CPU"
    return assumed, f"the message names no device; the history is shown for {assumed}"


def _tf_history(
    raw_op: str | None, dtype: str | None, device: str | None, attr: str | None
) -> dict[str, Any]:
    from explorer.analysis import releases

    empty: dict[str, Any] = {"history": [], "changes": [], "first_release_with_kernel": None}
    if raw_op is None:
        return {**empty, "history_note": "no shipped release has this op"}
    if dtype is None:
        return {
            **empty,
            "history_note": "the message names no floating dtype, so there is no history to follow",
        }
    if device is None:
        return {**empty, "history_note": "the message's device is not one the shipped registries have"}
    try:
        entries = releases.history(raw_op, dtype, device, attr)
    except ValueError as exc:
        return {**empty, "history_note": str(exc)}
    first = next((e.version for e in entries if e.status == "ok"), None)
    return {
        "history": [{"version": e.version, "status": e.status, "reason": e.reason} for e in entries],
        "changes": [
            {"version": e.version, "status": e.status, "reason": e.reason} for e in releases.changes(entries)
        ],
        "first_release_with_kernel": first,
        "history_note": "",
    }


def _tf_installed(raw_op: str | None, dtype: str | None, device: str | None) -> dict[str, Any]:
    """What the installed TensorFlow's registry declares for the op × dtype × device."""
    version = framework_version("tensorflow")
    out: dict[str, Any] = {"framework": "tensorflow", "release": version, "status": None, "note": ""}
    if version is None:
        return {**out, "note": "TensorFlow is not installed here"}
    from explorer.runtime.registry import get_registry

    try:
        reg = get_registry()
    except Exception as exc:
        return {**out, "note": f"the installed TensorFlow's registry could not be read: {exc}"[:300]}
    if raw_op is None or not reg.has_op(raw_op):
        why = f"it has no op {raw_op}" if raw_op else "the message names no op to look up"
        return {**out, "note": why}
    out["kernel_dtypes"] = {
        d: [f for f in reg.float_dtypes if reg.declared(raw_op, f, d).value == "ok"]
        for d in reg.device_types
        if d in _HISTORY_DEVICES
    }
    if dtype is None or device is None or device not in reg.device_types or dtype not in reg.float_dtypes:
        return {**out, "note": "the message names no floating dtype or no device to look up"}
    out["status"] = reg.declared(raw_op, dtype, device).value
    return out


# ---------------------------------------------------------------- workarounds


def _tf_candidates(parsed: ParsedError, op: Any, dtype: str, device: str | None) -> list[tuple[str, str]]:
    """(description, code) of TensorFlow workarounds for the error, best first."""
    from explorer.runtime.workarounds import tensorflow_code

    run_on = "GPU" if device in ("GPU", "XLA_GPU_JIT") else "CPU"
    wide = "float64" if dtype == "float32" else "float32"
    verb = "create it in" if op.arity == 0 else "compute in"
    cast = f"{verb} {wide} on {run_on}, then cast to {dtype} with tf.cast"
    if parsed.kind == "xla_unsupported_op":
        return [
            (
                f"run {op.tf_public} without XLA (no jit_compile) on {run_on}",
                tensorflow_code(op.name, dtype, run_on),
            ),
            (cast + " (no jit_compile)", tensorflow_code(op.name, dtype, run_on, "eager", compute=wide)),
        ]
    if parsed.kind in ("xla_unsupported_dtype", "xla_invalid_type"):
        return [
            (
                f"{verb} {wide} under XLA on {run_on}, then cast to {dtype} with tf.cast",
                tensorflow_code(op.name, dtype, run_on, "xla", compute=wide),
            ),
            (cast + " (no jit_compile)", tensorflow_code(op.name, dtype, run_on, "eager", compute=wide)),
        ]
    return [(cast, tensorflow_code(op.name, dtype, run_on, "eager", compute=wide))]


def plain_code(framework: str, op_name: str, dtype: str, device: str | None = None) -> tuple[str, str]:
    """PyTorch or JAX code computing catalog op ``op_name`` in float32 on ``dtype`` inputs and casting
    the result back to ``dtype``, with the op's public call (:mod:`explorer.runtime.workarounds`);
    returns ``(code, "")`` or ``("", why)``.

    >>> code, why = plain_code("torch", "log_softmax", "float16")
    >>> "torch.log_softmax(x.to(torch.float32), -1)" in code and why
    ''
    """
    from explorer.formats import resolve
    from explorer.ops import get_op
    from explorer.runtime import workarounds

    op = get_op(op_name)
    name = resolve(dtype).name
    wide = "float64" if name == "float32" else "float32"
    try:
        if framework == "torch":
            return workarounds.torch_code(op.name, name, "cuda" if device == "GPU" else "cpu", wide), ""
        return workarounds.jax_code(op.name, name, wide), ""
    except ValueError:
        api = "PyTorch" if framework == "torch" else "NumPy-style (jax.numpy)"
        return "", f"the catalog has no {api} call for {op.name} to write code from"


def _workaround(parsed: ParsedError, op_name: str | None, run: bool) -> dict[str, Any]:
    """The workaround: its code, whether it ran here and in which dtype it came back."""
    from explorer.ops import get_op

    none: dict[str, Any] = {"description": "", "code": "", "ran": False, "result_dtype": None, "note": ""}
    framework = parsed.framework
    if op_name is None:
        return {
            **none,
            "note": f"no catalog op stands for {parsed.raw_op or 'the failing op'}, so no code is written",
        }
    op = get_op(op_name)
    dtype = parsed.dtype
    if dtype is None and parsed.kind == "xla_unsupported_op":
        dtype = "float32"
    if dtype is None:
        return {**none, "note": "the message names no floating dtype to write code for"}
    if framework == "tensorflow":
        candidates = _tf_candidates(parsed, op, dtype, parsed.device)
    else:
        code, why = plain_code(framework, op.name, dtype, parsed.device)
        if not code:
            return {**none, "note": why}
        candidates = [
            (f"compute {op.name} in float32 with {_FRAMEWORK_WORDS[framework]}, then cast to {dtype}", code)
        ]
    if parsed.dtype is None:
        none["note"] = f"the message names no dtype; the code is written for {dtype}"
    if not run:
        description, code = candidates[0]
        return {
            **none,
            "description": description,
            "code": code,
            "note": _also(none["note"], "not run (--no-run)"),
        }
    version = framework_version(framework)
    if version is None:
        description, code = candidates[0]
        why = f"{_PACKAGES[framework]} is not installed here, so the code was not run"
        return {**none, "description": description, "code": code, "note": _also(none["note"], why)}
    failures = []
    for description, code in candidates:
        got, why = _run_in_sandbox(framework, code)
        if got is not None and (got == dtype or not op.float_output):
            return {**none, "description": description, "code": code, "ran": True, "result_dtype": got}
        failures.append(f"{description}: {why or f'came back in {got}'}")
    return {**none, "note": "no workaround ran here: " + "; ".join(failures)}


def _also(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second


# ---------------------------------------------------------------- the explanation


def _listed_dtypes(parsed: ParsedError, device: str) -> list[str]:
    """The dtypes the message's kernels take on ``device`` (its data attribute, or every attribute
    when it names none), in the message's order."""
    out: list[str] = []
    for listed_device, constraints in parsed.listed_kernels:
        if listed_device != device:
            continue
        values = (
            constraints.get(parsed.attr, []) if parsed.attr else [t for v in constraints.values() for t in v]
        )
        out += values or ["any dtype"]
    return list(dict.fromkeys(out))


def _capital(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


def _sentence_error(d: dict[str, Any], parsed: ParsedError) -> str:
    fw = _FRAMEWORK_WORDS[parsed.framework]
    raw = d["raw_op"] or "the op"
    dtype = d["dtype"] or "this dtype"
    device = d["device"]
    on = f" on {device}" if device else ""
    if parsed.kind in _NO_KERNEL_KINDS:
        if d["dtype"]:
            text = f"{fw} found no {dtype} kernel for {raw}{on}"
        else:
            text = (
                f"{fw} found no kernel for {raw}{on} in the dtype it was given (the message does not name it)"
            )
        if parsed.listed_kernels and device:
            own = _listed_dtypes(parsed, device)
            text += (
                f": the release that raised it lists {device} kernels for {_join(own)} only"
                if own
                else f": the release that raised it lists no {device} kernel for {raw} at all"
            )
        return text + "."
    if parsed.kind in _SIGNATURE_KINDS:
        allowed = _join(list(parsed.allowed)) or "other dtypes"
        attr = f" (attribute {parsed.attr})" if parsed.attr else ""
        return _capital(
            f"{raw}'s signature{attr} does not accept {dtype} at all: it allows {allowed}; "
            "so no device runs it in this dtype."
        )
    if parsed.kind == "xla_unsupported_op":
        return (
            f"XLA ({device}) has no kernel for {raw}: a function compiled with jit_compile=True "
            "cannot contain it."
        )
    if parsed.kind in ("xla_unsupported_dtype", "xla_invalid_type"):
        return f"XLA could not compile {raw} in {dtype}: the compiler rejected the dtype."
    if parsed.kind == "torch_not_implemented":
        target = f" ({d['op']})" if d["op"] else ""
        return f"PyTorch's kernel {parsed.raw_op}{target} has no {dtype} implementation{on}."
    if parsed.kind == "jax_fft_dtype":
        return f"XLA's {parsed.raw_op} takes only {_join(list(parsed.allowed))} inputs, not {dtype}."
    what = f" for {d['op']}" if d["op"] else ""
    return f"{fw} has no {dtype} implementation{what}{on}."


def releases_text(versions: list[str]) -> str:
    """Shipped releases in words: one, a few by name, or many as a span.

    >>> releases_text(["2.12.0"]), releases_text(["2.12.0", "2.13.0", "2.14.0", "2.15.0"])
    ('shipped release 2.12.0', 'the 4 shipped releases from 2.12.0 to 2.15.0')
    """
    if len(versions) == 1:
        return f"shipped release {versions[0]}"
    if len(versions) <= 3:
        return f"shipped releases {_join(versions)}"
    return f"the {len(versions)} shipped releases from {versions[0]} to {versions[-1]}"


def _sentence_matches(m: dict[str, Any] | None) -> str:
    if not m:
        return ""
    if m["exact"]:
        verb = "registers" if len(m["exact"]) == 1 else "register"
        return f"The message's kernel list is exactly what {releases_text(m['exact'])} {verb}."
    if not m["closest"]:
        return "No shipped release has this op, so the message's kernel list cannot be compared."
    from explorer.analysis import releases

    shipped = releases.shipped_releases()
    closest = m["closest"]
    which = (
        f"the closest is {closest[0]}"
        if len(closest) == 1
        else f"the closest are the {len(closest)} releases from {closest[0]} to {closest[-1]}"
    )
    return (
        f"No shipped release ({_span(shipped)}) registers exactly the kernels the message lists, so it "
        f"comes from another release or build; {which} ({_count(m['differences'], 'difference')}: "
        f"{_count(len(m['only_in_message']), 'kernel dtype')} only in the message, "
        f"{len(m['only_in_closest'])} only in the release)."
    )


def history_summary(history: list[dict[str, Any]]) -> str:
    """A history as runs of equal status: ``no_kernel 2.12.0 to 2.17.1, ok 2.18.0 to 2.21.0``.

    >>> history_summary([{"version": "2.12.0", "status": "no_kernel"}, {"version": "2.13.0", "status": "ok"},
    ...                  {"version": "2.14.0", "status": "ok"}])
    'no_kernel 2.12.0, ok 2.13.0 to 2.14.0'
    """
    runs: list[tuple[str, list[str]]] = []
    for entry in history:
        if runs and runs[-1][0] == entry["status"]:
            runs[-1][1].append(entry["version"])
        else:
            runs.append((entry["status"], [entry["version"]]))
    return ", ".join(f"{status} {_span(versions)}" for status, versions in runs)


def _sentence_history(d: dict[str, Any]) -> str:
    if not d["history"]:
        return ""
    raw, dtype, device = d["raw_op"], d["dtype"], d["history_device"]
    first = d["first_release_with_kernel"]
    shipped = [h["version"] for h in d["history"]]
    summary = history_summary(d["history"])
    kernel = f"a {dtype} {device} kernel for {raw}"
    if first is None:
        return f"No shipped release ({_span(shipped)}) has {kernel} ({summary})."
    if first == shipped[0]:
        return f"The oldest shipped release, TensorFlow {first}, already has {kernel} ({summary})."
    return f"The first shipped release with {kernel} is TensorFlow {first} ({summary})."


def _sentence_installed(d: dict[str, Any]) -> str:
    inst = d["installed"]
    fw = _FRAMEWORK_WORDS.get(inst["framework"], inst["framework"])
    if inst["release"] is None:
        return f"{fw} is not installed here."
    if inst["framework"] != "tensorflow":
        return f"{fw} {inst['release']} is installed here (explorer has no kernel registry for it)."
    status = inst.get("status")
    where = d["history_device"] or d["device"]
    release = f"TensorFlow {inst['release']}"
    if status == "ok":
        text = f"The installed {release} declares a {d['dtype']} {where} kernel for {d['raw_op']}"
        if d["kind"] in ("xla_unsupported_dtype", "xla_invalid_type"):
            text += " (the kernel that rejected the dtype when compiling)"
        if inst.get("ran") is True:
            text += f", and running it here returned {inst['result_dtype']}"
        elif inst.get("ran") is False:
            error = str(inst.get("run_error", "no result"))
            text += f", but running it here failed ({error[:160]}{'…' if len(error) > 160 else ''})"
        return text + "."
    if status == "no_kernel":
        return f"The installed {release} has no {d['dtype']} {where} kernel for {d['raw_op']} either."
    if status == "unsupported_dtype":
        return f"The installed {release} does not accept {d['dtype']} for {d['raw_op']} either."
    per_device = inst.get("kernel_dtypes") or {}
    if where in per_device:

        def dtypes(device: str) -> str:
            return _join(per_device[device]) or "no floating dtype"

        text = f"The installed {release} has {where} kernels for {d['raw_op']} in {dtypes(where)}"
        if where.endswith("_JIT") and "CPU" in per_device:
            text += f", and CPU kernels (without XLA) in {dtypes('CPU')}"
        return text + "."
    return f"{release} is installed here, but {inst.get('note') or 'there is nothing to look up'}."


def _sentence_workaround(w: dict[str, Any]) -> str:
    if w["code"] and w["ran"]:
        return f"Workaround: {w['description']} (ran here, returned {w['result_dtype']})."
    if w["code"]:
        return f"Workaround: {w['description']}; {w['note']}."
    return f"No workaround is offered: {w['note']}."


def explanation(d: dict[str, Any], parsed: ParsedError) -> str:
    """The plain-words explanation of a :func:`diagnose` result, sentence by sentence from its facts."""
    sentences = [
        _sentence_error(d, parsed),
        _sentence_matches(d["matching_releases"]),
        _sentence_history(d),
        _sentence_installed(d),
        _sentence_workaround(d["workaround"]),
    ]
    return " ".join(s for s in sentences if s)


# ---------------------------------------------------------------- diagnose


def not_recognised(reason: str = "") -> dict[str, Any]:
    """The result for a text that matches no pattern: what was looked for.

    >>> not_recognised()["recognised"]
    False
    """
    lines = looked_for()
    why = reason or "The text was not recognised as a TensorFlow, PyTorch or JAX kernel or dtype error."
    return {
        "recognised": False,
        "framework": None,
        "kind": None,
        "raw_op": None,
        "op": None,
        "dtype": None,
        "device": None,
        "explanation": why + " Looked for: " + " | ".join(lines),
        "looked_for": lines,
    }


def diagnose(text: str | bytes, run_workaround: bool = True) -> dict[str, Any]:
    """Everything explorer can say about an error text, as plain (JSON-ready) data.

    Keys: ``recognised``, ``framework``, ``kind``, ``raw_op``, ``op``, ``other_ops``, ``dtype``,
    ``dtype_text``, ``device``, ``mode``, ``attr``, ``message``, ``notes``, ``listed_kernels``,
    ``matching_releases``, ``installed`` (``release``, ``status``...), ``history``
    (``[{version, status, reason}]``, for ``history_device``), ``changes``,
    ``first_release_with_kernel``, ``explanation`` and ``workaround`` (``description``, ``code``,
    ``ran``, ``result_dtype``, ``note``); ``looked_for`` when the text is not recognised.
    ``run_workaround=False`` writes the workaround without running anything.  ValueError for a
    text over :data:`explorer.analysis.error_text.MAX_TEXT_BYTES`.
    """
    if isinstance(text, str | bytes | bytearray) and not text.strip():
        return not_recognised("The text is empty.")
    parsed = parse_error(text)
    if parsed is None:
        return not_recognised()
    d: dict[str, Any] = {"recognised": True, **parsed.to_dict()}
    raw = parsed.raw_op
    notes = list(parsed.notes)
    if parsed.framework == "tensorflow":
        raw = _canonical_raw_op(parsed.raw_op) or parsed.raw_op
        if raw != parsed.raw_op:
            d["raw_op"] = raw
        device, device_note = _history_device(parsed)
        if device_note:
            notes.append(device_note)
        d["matching_releases"] = matching_releases(parsed, _canonical_raw_op(raw))
        d.update(_tf_history(_canonical_raw_op(raw), parsed.dtype, device, parsed.attr))
        d["history_device"] = device
        d["installed"] = _tf_installed(raw, parsed.dtype, device)
    else:
        d["matching_releases"] = None
        d.update({"history": [], "changes": [], "first_release_with_kernel": None, "history_device": None})
        d["history_note"] = "explorer ships kernel registries of TensorFlow releases only"
        version = framework_version(parsed.framework)
        note = "" if version else f"{_PACKAGES[parsed.framework]} is not installed here"
        d["installed"] = {"framework": parsed.framework, "release": version, "status": None, "note": note}
    d["workaround"] = _workaround(parsed, d["op"], run_workaround)
    if parsed.framework == "tensorflow" and run_workaround:
        _check_native(d, parsed)
    d["notes"] = notes
    d["explanation"] = explanation(d, parsed)
    return d


def _check_native(d: dict[str, Any], parsed: ParsedError) -> None:
    """Where the installed registry declares a kernel, run the op natively to show it works here."""
    from explorer.runtime.workarounds import tensorflow_code

    inst = d["installed"]
    if inst.get("status") != "ok" or d["op"] is None or d["dtype"] is None:
        return
    device = d["history_device"] or "CPU"
    mode = "xla" if device.endswith("_JIT") else "eager"
    run_on = "GPU" if device in ("GPU", "XLA_GPU_JIT") else "CPU"
    got, why = _run_in_sandbox("tensorflow", tensorflow_code(d["op"], d["dtype"], run_on, mode))
    inst["ran"] = got is not None
    inst["result_dtype"] = got
    if why:
        inst["run_error"] = why


__all__ = [
    "WORKAROUND_TIMEOUT",
    "diagnose",
    "explanation",
    "framework_version",
    "history_summary",
    "kernel_set",
    "matching_releases",
    "not_recognised",
    "plain_code",
    "releases_text",
    "run_code",
]
