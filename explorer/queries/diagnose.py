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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from explorer.analysis.error_explanation import FRAMEWORK_WORDS, explanation, not_recognised
from explorer.analysis.error_releases import (
    HISTORY_DEVICES,
    canonical_raw_op,
    history_device,
    matching_releases,
    tf_history,
)
from explorer.analysis.error_text import ParsedError, parse_error, read_text

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


def _sandbox_call(framework: str, fn: Callable[..., Any], *args: Any) -> tuple[Any, str]:
    """(what ``fn(*args)`` returned in the framework's worker, "") or (None, why it did not).

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
            return box.call(key, fn, *args, timeout=WORKAROUND_TIMEOUT), ""
    except SandboxError as exc:
        return None, str(exc).splitlines()[0]
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return None, f"{type(exc).__name__}: {first}"[:300]


def _run_in_sandbox(framework: str, code: str) -> tuple[str | None, str]:
    """(result dtype, "") when ``code`` ran in the framework's worker, else (None, why)."""
    got, why = _sandbox_call(framework, run_code, code)
    return (None, why) if got is None else (str(got), "")


def _check_in_sandbox(
    framework: str, code: str, op_name: str | None, dtype: str | None
) -> tuple[dict[str, Any] | None, str]:
    """(the check of :func:`~explorer.runtime.workaround_check.run_and_check`, "") when ``code``
    ran in the framework's worker, else (None, why)."""
    from explorer.runtime.workaround_check import run_and_check

    source = "keras" if framework == "keras" else framework
    got, why = _sandbox_call(framework, run_and_check, code, source, op_name, dtype)
    return (None, why) if got is None else (dict(got), "")


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
    from explorer.formats import format_name
    from explorer.ops import get_op
    from explorer.runtime import workarounds

    op = get_op(op_name)
    name = format_name(dtype)
    wide = "float64" if name == "float32" else "float32"
    try:
        if framework == "torch":
            return workarounds.torch_code(op.name, name, "cuda" if device == "GPU" else "cpu", wide), ""
        return workarounds.jax_code(op.name, name, wide), ""
    except ValueError:
        api = "PyTorch" if framework == "torch" else "NumPy-style (jax.numpy)"
        return "", f"the catalog has no {api} call for {op.name} to write code from"


#: the workaround's note while it is being run and checked (the reading is shown before)
PENDING = "running the workaround and checking it against the float64 reference…"


def _workaround(
    parsed: ParsedError, op_name: str | None, run: bool, text: str = "", pending: bool = False
) -> dict[str, Any]:
    """The workaround: its code, whether it ran here and in which dtype it came back, its check
    against the float64 reference (``check``), and (PyTorch) the fix written with the user's own
    names from the pasted ``text`` (``lesson``).  ``pending``: written, to be run and checked."""
    from explorer.ops import get_op

    none: dict[str, Any] = {
        "description": "",
        "code": "",
        "ran": False,
        "result_dtype": None,
        "note": "",
        "lesson": "",
        "lesson_from": "",
        "pending": False,
        "check": None,
    }
    framework = parsed.framework
    from explorer.queries.explain_kinds import MISMATCH_KINDS, NOTHING_TO_RUN, RUNS_WITH, kind_candidates

    special = kind_candidates(parsed, op_name)
    if special is not None:
        if not special:
            why = NOTHING_TO_RUN.get(parsed.kind) or (
                f"no catalog op stands for {parsed.raw_op or 'the failing op'}, so no code is written"
            )
            return {**none, "note": why}
        keras_api = parsed.kind == "keras_mixed_precision_api"
        runner = "keras" if keras_api else RUNS_WITH.get(framework, framework)
        checked_op = op_name if parsed.kind in MISMATCH_KINDS else None
        return _run_candidates(none, runner, special, parsed.dtype, run, pending=pending, op_name=checked_op)
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
    done = _run_candidates(
        none, framework, candidates, dtype, run, op.float_output, pending=pending, op_name=op.name
    )
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
    pending: bool = False,
    op_name: str | None = None,
) -> dict[str, Any]:
    """The first candidate that runs here and passes its check: its output, on inputs laid out as
    the framework lays them out, against catalog op ``op_name``'s float64 reference rounded to
    ``dtype`` (:func:`~explorer.runtime.workaround_check.run_and_check`).  A candidate whose check
    fails is never offered; one that cannot be checked (no catalog op computes it) is offered when
    it returns ``dtype`` (any dtype when ``dtype`` is None or the op's output is not a float),
    marked "not checked".  The candidates are only written when ``run`` is False (``pending``:
    they are about to be run)."""
    from explorer.runtime.workaround_check import not_checked

    if not run:
        description, code = candidates[0]
        note = PENDING if pending else "not run: running it was turned off"
        check = {**not_checked("not run yet"), "status": "pending"} if pending else not_checked(note)
        return {
            **none,
            "description": description,
            "code": code,
            "note": _also(none["note"], note),
            "pending": pending,
            "check": check,
        }
    version = framework_version(framework)
    if version is None:
        description, code = candidates[0]
        why = f"{_PACKAGES[framework]} is not installed here, so the code was not run"
        return {
            **none,
            "description": description,
            "code": code,
            "note": _also(none["note"], why),
            "check": not_checked(why),
        }
    failures: list[str] = []
    for description, code in candidates:
        checked, why = _check_in_sandbox(framework, code, op_name, dtype)
        if checked is None:
            failures.append(f"{description}: {why}")
            continue
        got = checked["result_dtype"]
        if checked["status"] == "failed":
            failures.append(f"{description}: {checked['summary']}")
            continue
        if checked["status"] == "not checked" and not (dtype is None or got == dtype or not float_output):
            failures.append(f"{description}: came back in {got}")
            continue
        tried = "; ".join(failures)
        note = _also(none["note"], f"tried first, and it failed here: {tried}") if tried else none["note"]
        return {
            **none,
            "description": description,
            "code": code,
            "ran": True,
            "result_dtype": got,
            "note": note,
            "check": checked,
        }
    return {**none, "note": "no workaround passed here: " + "; ".join(failures)}


def _also(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second


# ---------------------------------------------------------------- diagnose


@dataclass
class Reading:
    """What an error text says, ready at once (:func:`read_error`): ``result`` is the JSON-ready
    reading (its workaround written, ``pending``); :meth:`finish` runs and checks the workaround."""

    #: the reading: :func:`diagnose`'s keys, the workaround not yet run
    result: dict[str, Any]
    #: the parsed text (None when not recognised)
    parsed: ParsedError | None = None
    #: the pasted text, decoded
    text: str = ""

    def finish(self, run_workaround: bool = True) -> dict[str, Any]:
        """The whole result: the workaround run in a sandbox worker and checked against the float64
        reference (``run_workaround=False``: written only), the device check, the explanation."""
        d = dict(self.result)
        parsed = self.parsed
        if parsed is None:
            return d
        d["workaround"] = _workaround(parsed, d["op"], run_workaround, self.text)
        d["device_check"] = None
        if run_workaround:
            from explorer.queries.explain_kinds import device_check

            d["installed"] = dict(d["installed"])
            d["device_check"] = device_check(parsed, d["op"], d["installed"].get("release"), _run_in_sandbox)
        if parsed.framework == "tensorflow" and run_workaround:
            _check_native(d, parsed)
        d["explanation"] = explanation(d, parsed)
        return d


def read_error(text: str | bytes) -> Reading:
    """The reading of an error text (framework, op, dtype, device, kind, what the releases say,
    the explanation): nothing is run, so it is ready at once; the workaround is written and
    marked ``pending`` until :meth:`Reading.finish` runs and checks it.  ValueError for a text
    over :data:`explorer.analysis.error_text.MAX_TEXT_BYTES`.

    >>> reading = read_error("Could not find device for node: {{node Range}} = Range[Tidx=DT_HALF]")
    >>> reading.result["op"], reading.result["workaround"]["pending"]
    ('range', True)
    """
    if isinstance(text, str | bytes | bytearray) and not text.strip():
        return Reading(not_recognised("The text is empty."))
    parsed = parse_error(text)
    if parsed is None:
        return Reading(not_recognised(reading=read_text(text)))
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
    d["workaround"] = _workaround(parsed, d["op"], False, pasted, pending=True)
    d["device_check"] = None
    d["notes"] = notes
    d["explanation"] = explanation(d, parsed)
    return Reading(d, parsed, pasted)


def diagnose(text: str | bytes, run_workaround: bool = True) -> dict[str, Any]:
    """Everything explorer can say about an error text, as plain (JSON-ready) data:
    :func:`read_error`, then :meth:`Reading.finish`.

    Keys: ``recognised``, ``framework``, ``kind``, ``raw_op``, ``op``, ``other_ops``, ``dtype``,
    ``dtype_text``, ``device``, ``mode``, ``attr``, ``message``, ``notes``, ``listed_kernels``,
    ``matching_releases``, ``installed`` (``release``, ``status``...), ``history``
    (``[{version, status, reason}]``, for ``history_device``), ``changes``,
    ``first_release_with_kernel``, ``explanation`` and ``workaround`` (``description``, ``code``,
    ``ran``, ``result_dtype``, ``note``, ``check``: its output against the float64 reference,
    see :func:`~explorer.runtime.workaround_check.run_and_check` (``status`` passed, failed, not
    checked or pending, ``summary`` with the figure), ``pending``, ``lesson``: the fix written
    with the names of the call the pasted traceback shows, PyTorch only, and ``lesson_from``:
    that line); ``looked_for`` when the text is not recognised.
    ``run_workaround=False`` writes the workaround without running anything.  ValueError for a
    text over :data:`explorer.analysis.error_text.MAX_TEXT_BYTES`.
    """
    return read_error(text).finish(run_workaround)


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
    "PENDING",
    "WORKAROUND_TIMEOUT",
    "Reading",
    "diagnose",
    "framework_version",
    "plain_code",
    "read_error",
    "run_code",
]
