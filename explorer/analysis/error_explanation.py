"""A diagnosis in plain words: each sentence of :func:`explanation` is built from the facts a
:func:`explorer.queries.diagnose.diagnose` result holds (the parsed message, the shipped
releases, the installed release, the workaround).

Pure: data in, text out.

>>> releases_text(["2.12.0", "2.13.0"])
'shipped releases 2.12.0 and 2.13.0'
"""

from __future__ import annotations

from typing import Any

from explorer.analysis.error_text import ErrorReading, ParsedError, looked_for

#: each framework's name in a sentence
FRAMEWORK_WORDS = {
    "tensorflow": "TensorFlow",
    "keras": "Keras",
    "torch": "PyTorch",
    "jax": "JAX",
    "xla": "XLA",
    "onnxruntime": "ONNX Runtime",
}
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
    from explorer.analysis.error_kinds_explanation import kind_sentence

    more = kind_sentence(d, parsed)
    if more is not None:
        return more
    fw = FRAMEWORK_WORDS[parsed.framework]
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
    fw = FRAMEWORK_WORDS.get(inst["framework"], inst["framework"])
    if inst["framework"] in ("xla", "onnxruntime"):
        return ""  # the kind's own sentence says what can be known without them
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
    from explorer.analysis.error_kinds_explanation import device_sentence

    sentences = [
        _sentence_error(d, parsed),
        device_sentence(d.get("device_check")),
        _sentence_matches(d["matching_releases"]),
        _sentence_history(d),
        _sentence_installed(d),
        _sentence_workaround(d["workaround"]),
        *_sentences_reading(parsed.reading),
    ]
    return " ".join(s for s in sentences if s)


def _sentences_reading(reading: ErrorReading | None) -> list[str]:
    """The structural reading (framework, library, op, dtypes, device, kind) with what the text left
    unnamed, then for a hardware gate what the device is, supports, needs, and can do instead."""
    if reading is None:
        return []
    from explorer.analysis.reading_explanation import gate_sentence, reading_sentence

    return [reading_sentence(reading), gate_sentence(reading) or ""]


def not_recognised(reason: str = "", reading: ErrorReading | None = None) -> dict[str, Any]:
    """The result for a text that matches no message pattern: what the structural ``reading`` found
    (framework, library, op, dtypes, device, kind, and for a hardware gate what the device supports
    and what to do instead), then what was looked for.

    >>> not_recognised()["recognised"]
    False
    >>> from explorer.analysis.error_text import read_text
    >>> r = not_recognised(reading=read_text("BFloat16 is not supported on MPS"))
    >>> r["framework"], r["dtype"], r["device"], r["reading"]["library"]
    ('torch', 'bfloat16', 'mps', 'mps')
    """
    lines = looked_for()
    why = reason or (
        "The text matched none of the message patterns of TensorFlow, Keras, PyTorch, JAX, XLA or ONNX "
        "Runtime kernel, dtype or mixed-precision errors."
    )
    said = ""
    if reading is not None and not reading.empty:
        said = " ".join(s for s in _sentences_reading(reading) if s) + " "
    return {
        "recognised": False,
        "framework": reading.framework if reading else None,
        "kind": reading.kind if reading and not reading.empty else None,
        "raw_op": reading.op.raw if reading else None,
        "op": reading.op.name if reading else None,
        "dtype": reading.dtypes[0].name if reading and reading.dtypes else None,
        "device": reading.device.type if reading else None,
        "reading": reading.to_dict() if reading is not None else None,
        "explanation": said + why + " Looked for: " + " | ".join(lines),
        "looked_for": lines,
    }
