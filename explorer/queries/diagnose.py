"""Explain an error text: what it says, what the shipped releases and the installed one say, and a fix.

:func:`diagnose` reads the text with :func:`explorer.analysis.error_text.parse_error` and adds,
for TensorFlow, the installed release's registry (:func:`explorer.runtime.registry.get_registry`),
the history of the op × dtype × device over the shipped releases
(:mod:`explorer.analysis.releases`), which shipped releases list exactly the kernels the message
lists (the message is evidence of the user's release), and a workaround: code computing the op in
float32 and casting back (or running it outside XLA), run in a sandbox worker before it is
offered.  For PyTorch and JAX the workaround is plain code with the op's public call, run only
where the framework is installed.  Every sentence of the explanation is built from these facts.

The reasoning is pure and lives in :mod:`explorer.analysis`: the shipped releases' facts in
:mod:`~explorer.analysis.error_releases`, the words in :mod:`~explorer.analysis.error_explanation`.
What is here touches the machine: the installed framework and its registry, and the sandbox
worker a workaround runs in.

>>> d = diagnose("Could not find device for node: {{node Range}} = Range[Tidx=DT_HALF]", run_workaround=False)
>>> d["op"], d["dtype"], d["device"], d["first_release_with_kernel"]
('range', 'float16', 'CPU', '2.18.0')
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from typing import Any

from explorer.analysis.error_explanation import FRAMEWORK_WORDS, explanation, not_recognised
from explorer.analysis.error_releases import (
    HISTORY_DEVICES,
    canonical_raw_op,
    history_device,
    matching_releases,
    tf_history,
)
from explorer.analysis.error_text import ParsedError, parse_error

#: seconds a workaround may run in its sandbox worker
WORKAROUND_TIMEOUT = 120.0
_PACKAGES = {
    "tensorflow": "tensorflow",
    "keras": "keras",
    "torch": "torch",
    "jax": "jax",
    "xla": "jaxlib",
    "onnxruntime": "onnxruntime",
}


# ---------------------------------------------------------------- running code


def run_code(code: str) -> str:
    """Run workaround ``code`` (it sets ``result``) and return the dtype name of its result.

    Top-level so that a sandbox worker can run it.

    >>> run_code("import numpy as np\\nresult = np.ones(2, np.float16)")
    'float16'
    """
    from explorer.runtime.workaround_exec import execute_workaround, result_dtype

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
            if framework == "keras" and key not in box.workers():
                from explorer.queries.explain_kinds import keras_worker_setup

                box.call(key, keras_worker_setup, timeout=WORKAROUND_TIMEOUT)
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


# ---------------------------------------------------------------- the installed TensorFlow


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
        if d in HISTORY_DEVICES
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
    out = [(cast, tensorflow_code(op.name, dtype, run_on, "eager", compute=wide))]
    from explorer.queries.explain_kinds import xla_only_devices

    jit = xla_only_devices(parsed)
    if jit:  # the message lists the dtype only on XLA devices: compiling with XLA is the fix to test
        description = (
            f"compile {op.tf_public} with XLA (tf.function(jit_compile=True)) on {run_on}: the message "
            f"lists a {dtype} kernel only for {' and '.join(jit)}"
        )
        out.insert(0, (description, tensorflow_code(op.name, dtype, run_on, "xla")))
    return out


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


def _workaround(parsed: ParsedError, op_name: str | None, run: bool, text: str = "") -> dict[str, Any]:
    """The workaround: its code, whether it ran here and in which dtype it came back, and (PyTorch)
    the fix written with the user's own names from the pasted ``text`` (``lesson``)."""
    from explorer.ops import get_op

    none: dict[str, Any] = {
        "description": "",
        "code": "",
        "ran": False,
        "result_dtype": None,
        "note": "",
        "lesson": "",
        "lesson_from": "",
    }
    framework = parsed.framework
    from explorer.queries.explain_kinds import NOTHING_TO_RUN, RUNS_WITH, kind_candidates

    special = kind_candidates(parsed, op_name)
    if special is not None:
        if not special:
            why = NOTHING_TO_RUN.get(parsed.kind) or (
                f"no catalog op stands for {parsed.raw_op or 'the failing op'}, so no code is written"
            )
            return {**none, "note": why}
        keras_api = parsed.kind == "keras_mixed_precision_api"
        runner = "keras" if keras_api else RUNS_WITH.get(framework, framework)
        return _run_candidates(none, runner, special, parsed.dtype, run)
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
            (f"compute {op.name} in float32 with {FRAMEWORK_WORDS[framework]}, then cast to {dtype}", code)
        ]
    if parsed.dtype is None:
        none["note"] = f"the message names no dtype; the code is written for {dtype}"
    done = _run_candidates(none, framework, candidates, dtype, run, op.float_output)
    done["lesson"], done["lesson_from"] = _lesson(parsed, op, dtype, text) if done["code"] else ("", "")
    return done


def _lesson(parsed: ParsedError, op: Any, dtype: str, text: str) -> tuple[str, str]:
    """The fix written with the user's own names, from the call line the pasted traceback shows,
    and that line; ``("", "")`` when the text shows no call to the op (PyTorch only)."""
    if parsed.framework != "torch":
        return "", ""
    from explorer.analysis.call_trace import trace_call
    from explorer.analysis.user_call import torch_lesson, user_call

    traced = trace_call(op.torch, "torch", "torch.float32", ("x0", "x1", "x2"))
    names = (op.name, *(c.rsplit(".", 1)[-1] for c in (traced.calls if traced else ())))
    call = user_call(text, tuple(dict.fromkeys(names)))
    if call is None:
        return "", ""
    wide = "float64" if dtype == "float32" else "float32"
    return torch_lesson(call, dtype, wide), call.line


def _run_candidates(
    none: dict[str, Any],
    framework: str,
    candidates: list[tuple[str, str]],
    dtype: str | None,
    run: bool,
    float_output: bool = True,
) -> dict[str, Any]:
    """The first candidate that runs here and returns ``dtype`` (any dtype when ``dtype`` is None
    or the op's output is not a float); the candidates are only written when ``run`` is False."""
    if not run:
        description, code = candidates[0]
        return {
            **none,
            "description": description,
            "code": code,
            "note": _also(none["note"], "not run: running it was turned off"),
        }
    version = framework_version(framework)
    if version is None:
        description, code = candidates[0]
        why = f"{_PACKAGES[framework]} is not installed here, so the code was not run"
        return {**none, "description": description, "code": code, "note": _also(none["note"], why)}
    failures: list[str] = []
    for description, code in candidates:
        got, why = _run_in_sandbox(framework, code)
        if got is not None and (dtype is None or got == dtype or not float_output):
            tried = "; ".join(failures)
            note = _also(none["note"], f"tried first, and it failed here: {tried}") if tried else none["note"]
            return {
                **none,
                "description": description,
                "code": code,
                "ran": True,
                "result_dtype": got,
                "note": note,
            }
        failures.append(f"{description}: {why or f'came back in {got}'}")
    return {**none, "note": "no workaround ran here: " + "; ".join(failures)}


def _also(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second


# ---------------------------------------------------------------- diagnose


def diagnose(text: str | bytes, run_workaround: bool = True) -> dict[str, Any]:
    """Everything explorer can say about an error text, as plain (JSON-ready) data.

    Keys: ``recognised``, ``framework``, ``kind``, ``raw_op``, ``op``, ``other_ops``, ``dtype``,
    ``dtype_text``, ``device``, ``mode``, ``attr``, ``message``, ``notes``, ``listed_kernels``,
    ``matching_releases``, ``installed`` (``release``, ``status``...), ``history``
    (``[{version, status, reason}]``, for ``history_device``), ``changes``,
    ``first_release_with_kernel``, ``explanation`` and ``workaround`` (``description``, ``code``,
    ``ran``, ``result_dtype``, ``note``, ``lesson``: the fix written with the names of the
    call the pasted traceback shows, PyTorch only, and ``lesson_from``: that line);
    ``looked_for`` when the text is not recognised.
    ``run_workaround=False`` writes the workaround without running anything.  ValueError for a
    text over :data:`explorer.analysis.error_text.MAX_TEXT_BYTES`.
    """
    if isinstance(text, str | bytes | bytearray) and not text.strip():
        return not_recognised("The text is empty.")
    parsed = parse_error(text)
    if parsed is None:
        from explorer.analysis.error_text import read_text

        return not_recognised(reading=read_text(text))
    d: dict[str, Any] = {"recognised": True, **parsed.to_dict()}
    raw = parsed.raw_op
    notes = list(parsed.notes)
    if parsed.framework == "tensorflow":
        raw = canonical_raw_op(parsed.raw_op) or parsed.raw_op
        if raw != parsed.raw_op:
            d["raw_op"] = raw
        device, device_note = history_device(parsed)
        if device_note:
            notes.append(device_note)
        d["matching_releases"] = matching_releases(parsed, canonical_raw_op(raw))
        d.update(tf_history(canonical_raw_op(raw), parsed.dtype, device, parsed.attr))
        d["history_device"] = device
        d["installed"] = _tf_installed(raw, parsed.dtype, device)
    else:
        d["matching_releases"] = None
        d.update({"history": [], "changes": [], "first_release_with_kernel": None, "history_device": None})
        d["history_note"] = "explorer ships kernel registries of TensorFlow releases only"
        version = framework_version(parsed.framework)
        note = "" if version else f"{_PACKAGES[parsed.framework]} is not installed here"
        d["installed"] = {"framework": parsed.framework, "release": version, "status": None, "note": note}
    pasted = text.decode(errors="replace") if isinstance(text, bytes | bytearray) else str(text)
    d["workaround"] = _workaround(parsed, d["op"], run_workaround, pasted)
    d["device_check"] = None
    if run_workaround:
        from explorer.queries.explain_kinds import device_check

        d["device_check"] = device_check(parsed, d["op"], d["installed"].get("release"), _run_in_sandbox)
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
    "framework_version",
    "plain_code",
    "run_code",
]
