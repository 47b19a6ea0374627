"""The kernels a TensorFlow message lists (``device='CPU'; T in [DT_FLOAT]`` lines) and the type
attribute of a node (``Tidx=DT_HALF``) that carries the dtype the error is about."""

from __future__ import annotations

import re

from explorer.analysis.error_text._dtype_names import format_name, tf_dtype_name

_KERNEL_LINE = re.compile(
    r"^[ \t]*(?:\.[ \t]*Registered:[ \t]*)?device='(?P<device>[^'\n]{1,60})'(?P<rest>[^\n]*)$"
)
_CONSTRAINT = re.compile(r"(?<!\w)(?P<attr>\w{1,100}) in \[(?P<types>[^\]\n]{0,2000})\]")
_LABEL = re.compile(r"label='[^'\n]{0,500}'")


def parse_kernel_lines(text: str) -> tuple[list[tuple[str, dict[str, list[str]]]], int]:
    """The kernels a TensorFlow message lists (``  device='CPU'; T in [DT_FLOAT]`` lines, read from
    the first such line until the first line that is not one), and how many carried a label
    (those are left out, as the registry reader leaves them out).

    >>> parse_kernel_lines("Registered kernels:\\n  device='CPU'; T in [DT_FLOAT, DT_HALF]\\n"
    ...                    "  device='CPU'; label='neon'; T in [DT_FLOAT]\\n\\n [[node]]")
    ([('CPU', {'T': ['float32', 'float16']})], 1)
    """
    kernels: list[tuple[str, dict[str, list[str]]]] = []
    labelled = 0
    started = False
    for line in text.splitlines():
        if "<no registered kernels>" in line:
            break
        m = _KERNEL_LINE.match(line)
        if m is None:
            if started:
                break
            continue
        started = True
        if _LABEL.search(m.group("rest")):
            labelled += 1
            continue
        constraints = {
            c.group("attr"): [
                tf_dtype_name(t) for t in c.group("types").split(",") if t.strip() not in ("", "...")
            ]
            for c in _CONSTRAINT.finditer(m.group("rest"))
        }
        kernels.append((m.group("device"), constraints))
    return kernels, labelled


def _kernel_block(
    text: str, start: int, limit: int = 200_000
) -> tuple[list[tuple[str, dict[str, list[str]]]], int]:
    """Listed kernels after ``start``: the block under "All kernels registered for op",
    "Registered kernels:" or "Registered:" (a header within 3,000 characters of ``start``; the
    block within ``limit``)."""
    window = text[start : start + limit]
    header = re.search(
        r"All kernels registered for op \w+:|Registered kernels:|\.\s*Registered:", window[:3000]
    )
    if header is None:
        return [], 0
    return parse_kernel_lines(window[header.start() :].replace("Registered:", "Registered:\n", 1))


def _node_attrs(attrs: str) -> list[tuple[str, str]]:
    """``Tidx=DT_HALF, compute_uv=false`` -> the type-valued attributes ``[("Tidx", "DT_HALF")]``."""
    return re.findall(r"(?<!\w)(\w{1,100})=(DT_\w{1,40})", attrs or "")


def _data_attr(
    attrs: list[tuple[str, str]], kernels: list[tuple[str, dict[str, list[str]]]]
) -> tuple[str, str] | None:
    """The type attribute that carries "the dtype": one the listed kernels constrain, a floating
    format before any other, else the first floating one, else the first."""
    if not attrs:
        return None
    constrained = {a for _, c in kernels for a in c}
    ranked = sorted(
        attrs,
        key=lambda av: (av[0] not in constrained, format_name(av[1]) is None, attrs.index(av)),
    )
    return ranked[0]
