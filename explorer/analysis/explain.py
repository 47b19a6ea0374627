"""Plain-language explanations of availability cells, and declared-vs-probed disagreements.

Everything said here is computed from the registry and the probe's record; the
sentences only phrase it.
"""

from __future__ import annotations

import re
from typing import Any

from explorer.backends.tensorflow_registry import REGISTRY_DEVICE, Registry, registry_device
from explorer.outcome import Phase, Status

#: how error texts name the raw op that failed
_FAILING_OP = (
    re.compile(r"\{\{node [^}]*\}\} = (\w+)\["),
    re.compile(r"Op<name=(\w+);"),
    re.compile(r"No registered '(\w+)' OpKernel"),
    re.compile(r"__wrapped__(\w+)_device_"),
    re.compile(r"\[Op:(\w+)\]"),
)

#: how to install a backend that is not installed, from the project's folder (the extras of
#: its pyproject.toml; TensorFlow comes with the package itself)
INSTALL_HINTS = {
    "tensorflow": 'python -m pip install -e "."',
    "torch": 'python -m pip install -e ".[torch]"',
    "jax": 'python -m pip install -e ".[jax]"',
}

_MODE_WORDS = {
    "eager": "eagerly",
    "xla": "under XLA",
    "compile": "under torch.compile",
    "registry": "in the registry",
}


def failing_raw_op(error: str) -> str | None:
    """The raw op an error message names as the one that failed, or None (a traced function's
    name, ``[Op:__inference_...]``, is not a raw op).

    >>> failing_raw_op("Invalid type for Range half [Op:__inference_px_range_12]") is None
    True
    """
    for pattern in _FAILING_OP:
        for match in pattern.finditer(error):
            if not match.group(1).startswith("__inference_"):
                return match.group(1)
    return None


def _join(items: list[str]) -> str:
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def _allowed_text(reg: Registry, raw: str) -> str:
    allowed = reg.allowed_dtypes(raw)
    if allowed is None:
        return "any dtype"
    floats = [d for d in reg.float_dtypes if d in allowed]
    return ", ".join(floats) if floats else "no floating dtype"


def declared_sentence(reg: Registry, raw: str, dtype: str, device_type: str) -> str:
    """What the registry says about raw op × dtype on one registry device type."""
    status = reg.declared(raw, dtype, device_type)
    info = reg.op(raw)
    if status is Status.UNSUPPORTED_DTYPE:
        attr = f" (attribute {info.data_attr})" if info.data_attr else ""
        return (
            f"{raw} does not accept {dtype} at all: its signature{attr} allows "
            f"{_allowed_text(reg, raw)} (TensorFlow {reg.tf_version})."
        )
    devices = reg.kernel_devices(raw, dtype)
    if status is Status.NO_KERNEL:
        where = (
            f"{dtype} kernels exist only for {_join(devices)}"
            if devices
            else f"no device type has a {dtype} kernel"
        )
        return (
            f"{raw} accepts {dtype}, but TensorFlow {reg.tf_version} registers no {dtype} kernel "
            f"for it on {device_type}; {where}."
        )
    others = [d for d in devices if d != device_type]
    also = f" (also on {_join(others)})" if others else ""
    return f"TensorFlow {reg.tf_version} registers a {dtype} kernel for {raw} on {device_type}{also}."


def explain(row: dict[str, Any], reg: Registry | None) -> str:
    """One plain sentence for a row (keys backend, op, raw_op, dtype, device, mode, status, ...)."""
    backend, op, dtype = row["backend"], row["op"], row["dtype"]
    device, mode, status = row["device"], row["mode"], Status(row["status"])
    how = _MODE_WORDS.get(mode, mode)
    if mode == "registry":
        if reg is None:
            return ""
        return declared_sentence(reg, row["raw_op"], dtype, device)
    if status is Status.NOT_INSTALLED:
        extra = f" ({INSTALL_HINTS[backend]})" if backend in INSTALL_HINTS else ""
        return f"{backend} is not installed here{extra}, so {op} was not run."
    if status is Status.NO_DEVICE:
        text = f"There is no {device} on this machine, so {op} in {dtype} could not be run there"
        if backend == "tensorflow" and reg is not None and row.get("raw_op"):
            sentences = [
                declared_sentence(reg, raw, dtype, registry_device(device, mode))
                for raw in row["raw_op"].split(",")
                if reg.has_op(raw)
            ]
            return text + "; the registry says: " + " ".join(sentences)
        return text + "."
    if status is Status.OK and backend == "emulated":
        return (
            f"{op} in {dtype} is emulated, not native: computed in a wider dtype with NumPy and "
            f"rounded to {dtype}."
        )
    if status is Status.OK:
        return f"{op} runs natively in {dtype} on {device} {how} with {backend}."
    if status is Status.FALLBACK:
        return f"{op} ran {how}, but not as asked: {row.get('detail') or 'see the error'}."
    if status in (Status.CRASHED, Status.TIMEOUT):
        what = "crashed its worker process" if status is Status.CRASHED else "did not finish in time"
        return f"{op} in {dtype} on {device} {how} {what}; the notebook and the other probes were unaffected."
    if backend != "tensorflow" or reg is None:
        first = row.get("error", "").strip().splitlines()[:1]
        if status is Status.UNSUPPORTED_DTYPE:
            return (
                f"{backend} has no {dtype} support for {op}: {first[0] if first else ''}".rstrip(": ") + "."
            )
        return f"{op} in {dtype} failed with {backend}: {first[0] if first else 'no message'}."
    return _failure_sentence(row, reg, how)


#: where a failed run stopped (see :class:`explorer.outcome.Phase`), as words after "failed"
_WHERE = {
    Phase.OP_BUILD.value: ", while building the op, before any kernel was looked up",
    Phase.XLA_COMPILE.value: ", in XLA's compiler (the graph was built, but lowering it to HLO failed)",
    Phase.KERNEL_LOOKUP.value: ", at kernel lookup",
    Phase.KERNEL_RUN.value: ", when its kernel ran",
}
#: why a run failed although the registry declares the kernel, by the phase it failed in
_DECLARED_YET = {
    Phase.OP_BUILD.value: "The op could not even be built: {detail}.",
    Phase.XLA_COMPILE.value: "The XLA kernel is registered for {dtype}, but XLA's lowering of it rejected "
    "{dtype} while compiling.",
    Phase.KERNEL_LOOKUP.value: "No kernel was found at run time all the same.",
    Phase.KERNEL_RUN.value: "The kernel was found, but raised when it ran.",
}
#: phases the registry's sentence explains by itself when it declares no kernel or no such dtype
#: ("registers no float16 kernel for it on CPU", "does not accept bfloat16 at all")
_SAID_BY_REGISTRY = (Phase.OP_BUILD.value, Phase.KERNEL_LOOKUP.value)
#: the failure is in the graph builder (shape inference), which tf.function runs with or without XLA
_GRAPH_BUILDER = "graph builder"


def _failure_sentence(row: dict[str, Any], reg: Registry, how: str) -> str:
    """The explanation of a failed TensorFlow run: where it failed (its phase) and what the
    registry declares for the raw op that failed."""
    op, dtype, device, mode = row["op"], row["dtype"], row["device"], row["mode"]
    phase, detail = row.get("phase") or "", row.get("detail") or ""
    raw = failing_raw_op(row.get("error", "")) or ""
    catalog_raws = [r for r in row.get("raw_op", "").split(",") if r]
    failing = raw if reg.has_op(raw) else (catalog_raws[0] if catalog_raws else "")
    dev_type = registry_device(device, mode)
    prefix = f"{row.get('tf_public') or op} in {dtype} on {device} {how} failed"
    where = _WHERE.get(phase, "")
    first = row.get("error", "").strip().splitlines()[0] if row.get("error", "").strip() else ""
    after = ""
    if phase == Phase.OP_BUILD.value and mode == "xla" and _GRAPH_BUILDER in detail:
        after = (
            " Tracing builds the same graph with or without XLA, so a plain tf.function "
            "(no jit_compile) fails the same way."
        )
    if failing and reg.has_op(failing):
        inside = "" if failing in catalog_raws else f" inside {op} (not its main op {_join(catalog_raws)})"
        said = declared_sentence(reg, failing, dtype, dev_type)
        if reg.declared(failing, dtype, dev_type) is Status.OK:
            why = _DECLARED_YET.get(phase, "It failed all the same: {detail}.").format(
                dtype=dtype, detail=(detail or first).rstrip(".")
            )
            declared = f"although the registry declares a kernel: {said}"
            return f"{prefix} in {failing}{inside}{where}, {declared} {why}{after}"
        if phase in _SAID_BY_REGISTRY:  # the registry's sentence names the mechanism itself
            where = ""
        return f"{prefix} in {failing}{inside}{where}: {said}{after}"
    return f"{prefix}{where}: {first}{after}"


def refine_status(status: str, error: str, reg: Registry | None, dtype: str, device: str, mode: str) -> str:
    """Registry-based status for a failed TensorFlow run.

    The raw op the error names decides: ``unsupported_dtype`` when its signature
    excludes the dtype, ``no_kernel`` when it allows it but no kernel is registered
    for the device type, and ``error`` when a kernel *is* registered (the run failed
    elsewhere: the row's phase says where).  Without a named op the text-based status
    stays."""
    if reg is None or status not in (
        Status.NO_KERNEL.value,
        Status.UNSUPPORTED_DTYPE.value,
        Status.ERROR.value,
    ):
        return status
    raw = failing_raw_op(error)
    if not raw or not reg.has_op(raw) or (device, mode) not in REGISTRY_DEVICE:
        return status
    return reg.declared(raw, dtype, registry_device(device, mode)).value.replace(
        Status.OK.value, Status.ERROR.value
    )


def disagreement(declared: str | None, probed: str, row: dict[str, Any], reg: Registry | None) -> str:
    """Why the registry and the run disagree ("" when they agree or nothing was declared)."""
    if declared is None or probed in (Status.NO_DEVICE.value, Status.NOT_INSTALLED.value):
        return ""
    ran = probed in (Status.OK.value, Status.FALLBACK.value)
    if (declared == Status.OK.value) == ran:
        return ""
    catalog_raws = [r for r in row.get("raw_op", "").split(",") if r]
    public = row.get("tf_public") or row["op"]
    if ran:
        blocked = catalog_raws
        if reg is not None and (row["device"], row["mode"]) in REGISTRY_DEVICE:
            dev_type = registry_device(row["device"], row["mode"])
            blocked = [
                r
                for r in catalog_raws
                if reg.has_op(r) and reg.declared(r, row["dtype"], dev_type) is not Status.OK
            ] or catalog_raws
        return (
            f"the registry declares {declared} for {_join(blocked)} in {row['dtype']}, yet "
            f"{public} ran: the public function does not run that raw op in this dtype "
            f"(it is built from other ops, or converts the dtype first)."
        )
    raw = failing_raw_op(row.get("error", ""))
    if raw and raw not in catalog_raws:
        return (
            f"the registry has {row['dtype']} kernels for {_join(catalog_raws)}, but {public} "
            f"also runs {raw}, which failed: {_first(row)}"
        )
    return f"the registry declares a {row['dtype']} kernel, but running it failed ({probed}): {_first(row)}"


def _first(row: dict[str, Any]) -> str:
    lines = str(row.get("error", "")).strip().splitlines()
    return lines[0][:200] if lines else ""
