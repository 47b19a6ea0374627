"""The words a newcomer meets in the app, each explained once in a glossary at the foot of the app,
and every use of one in the app's sentences linked to its entry (an ordinary link: reachable by
keyboard and touch, not only by hovering).

>>> linked("The registry declares it under XLA_CPU_JIT.")  # doctest: +NORMALIZE_WHITESPACE
"The <a class='px-term' href='#px-term-registry'>registry</a> <a class='px-term'
href='#px-term-declared'>declares</a> it under <a class='px-term'
href='#px-term-xla_cpu_jit'>XLA_CPU_JIT</a>."
"""

from __future__ import annotations

import functools
import html
import re
from typing import Any

#: term -> what it means here, in the order the glossary lists them
GLOSSARY: dict[str, str] = {
    "registry": (
        "TensorFlow's kernel registry: the list, built into each TensorFlow release, of the kernels "
        "it has for each op, dtype and device type. Reading it runs nothing, and it covers GPUs on a "
        "machine without one. Explorer ships the registries of several releases to show since when a "
        "kernel exists. PyTorch has no such registry; its OpInfo test database lists the dtypes its "
        "own tests cover, which the app shows as declared too."
    ),
    "declared": (
        "Said by a registry (or PyTorch's OpInfo) without running the op. The heatmap shows a "
        "declared cell's letter in brackets, e.g. (+); a probed cell was really run."
    ),
    "probe": (
        "Running the op once in a sandboxed worker process on this machine and recording what "
        "happened (Probe now); results are cached on disk."
    ),
    "eager": "Mode eager: the op runs at once, op by op, as TensorFlow and PyTorch do by default.",
    "XLA": (
        "Mode xla: the op is compiled by XLA, the compiler behind tf.function(jit_compile=True) "
        "and JAX, which has kernels of its own (registry device types XLA_CPU_JIT, XLA_GPU_JIT)."
    ),
    "XLA_CPU_JIT": (
        "The device type under which TensorFlow's registry lists XLA's CPU kernels "
        "(XLA_GPU_JIT: its GPU kernels)."
    ),
    "compile": "Mode compile: PyTorch's torch.compile, which compiles the op before running it.",
    "fallback": ("A status: the op ran, but not as asked: on another device, or computed in another dtype."),
    "unsupported_dtype": (
        "A status: the op does not accept the dtype at all (its type list leaves it out), so no "
        "device has a kernel for it. no_kernel: the op accepts the dtype, but there is no kernel "
        "for it on that device."
    ),
    "emulated": (
        "Explorer's reference backend, not a framework: inputs rounded to the format, the op "
        "computed in float64 with NumPy, the result rounded to the format with ml_dtypes."
    ),
    "fnuz": (
        "In a float8 name (float8_e4m3fnuz, float8_e5m2fnuz): finite (no infinities) and unsigned "
        "zero (no -0); the bit pattern of -0 is the format's only NaN."
    ),
    "e8m0fnu": (
        "float8_e8m0fnu, the scale format of OCP's MX formats: 8 exponent bits, no mantissa, no "
        "sign (u), no infinities (fn): the powers of two 2^-127 to 2^127, and NaN."
    ),
    "tf32": (
        "TensorFloat-32: float32's 8 exponent bits with 10 mantissa bits, the format NVIDIA's "
        "tensor cores (Ampere and later) use for float32 matrix products. Explorer emulates it: "
        "stored in float32, rounded to 10 mantissa bits."
    ),
}

#: other spellings of a term that link to its entry
_FORMS: dict[str, tuple[str, ...]] = {
    "registry": ("registry", "registries"),
    "declared": ("declared", "declares", "declare"),
    "probe": ("probed", "probes", "probe"),
    "eager": ("eager", "eagerly"),
    "XLA": ("XLA",),
    "XLA_CPU_JIT": ("XLA_CPU_JIT", "XLA_GPU_JIT"),
    "compile": ("compile",),
    "fallback": ("fallback",),
    "unsupported_dtype": ("unsupported_dtype", "no_kernel"),
    "emulated": ("emulated",),
    "fnuz": ("fnuz",),
    "e8m0fnu": ("e8m0fnu",),
    "tf32": ("tf32",),
}
_TERM_OF = {form.lower(): term for term, forms in _FORMS.items() for form in forms}
#: whole words only; ``fnuz`` and ``e8m0fnu`` also inside a format's name (float8_e4m3fnuz)
_PATTERN = re.compile(
    r"(?<![\w.-])("
    + "|".join(re.escape(f) for f in sorted(_TERM_OF, key=len, reverse=True) if f not in ("fnuz", "e8m0fnu"))
    + r")(?![\w-])|(?<=_)(e8m0fnu|e\dm\dfnuz)(?![\w])",
    re.IGNORECASE,
)


def anchor(term: str) -> str:
    """The id of a term's glossary entry.

    >>> anchor("XLA_CPU_JIT")
    'px-term-xla_cpu_jit'
    """
    return "px-term-" + term.lower()


def linked(text: str) -> str:
    """``text`` escaped for HTML, with each use of a glossary term a link to its entry (the first
    use of each in the Tab order: :func:`link_markup`)."""
    return link_markup(html.escape(text))


#: elements whose text is not linked: links already, code, form controls, scripts and styles
#: (a link inside <summary> would nest one interactive element in another)
_NO_LINKS_IN = frozenset(
    {"a", "code", "pre", "script", "style", "button", "select", "option", "textarea", "kbd", "summary"}
)
_TAG = re.compile(r"(<[^>]*>)")
_TAG_NAME = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)")
_ROLE = re.compile(r"""\brole=['"]?(\w+)""")
_VOID = frozenset({"br", "img", "input", "hr", "meta", "link", "wbr", "col", "area", "source"})


def _linkable(piece: str, stack: list[tuple[str, bool | None]]) -> None:
    """Follow the open elements in ``stack``: (tag, whether text in it may hold links; None when
    the element does not decide).  Inside a ``role='list'`` only its list items may (a link
    anywhere else in the list breaks ARIA's list structure)."""
    tag = _TAG_NAME.match(piece)
    if tag is None:
        return
    name = tag[2].lower()
    if tag[1]:  # a closing tag: pop to its opening one
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] == name:
                del stack[i:]
                break
        return
    if name in _VOID or piece.endswith("/>"):
        return
    role = _ROLE.search(piece)
    decides: bool | None = None
    if name in _NO_LINKS_IN or (role and role[1] == "list"):
        decides = False
    elif role and role[1] == "listitem":
        decides = True
    stack.append((name, decides))


def _term_of(word: str) -> str:
    key = word.lower()
    return _TERM_OF.get(key) or ("e8m0fnu" if key == "e8m0fnu" else "fnuz")


# a few recent pieces (a whole-catalog table is ~400 KB: a large cache would hold megabytes per kernel)
@functools.lru_cache(maxsize=32)
def link_markup(markup: str) -> str:
    """``markup`` (HTML, already escaped) with every use of a glossary term in its text a link to
    the term's entry: the first use of each term is in the Tab order, later ones are links for the
    pointer and touch only (``tabindex='-1'``), so a table of statuses does not add a Tab stop per
    cell.  Text inside links, code, scripts, styles and form controls is left alone.

    >>> print(link_markup("<td>no_kernel</td><td>no_kernel</td><code>no_kernel</code>"))
    ... # doctest: +NORMALIZE_WHITESPACE
    <td><a class='px-term' href='#px-term-unsupported_dtype'>no_kernel</a></td><td><a
    class='px-term' href='#px-term-unsupported_dtype' tabindex='-1'>no_kernel</a></td><code>no_kernel</code>
    >>> link_markup("<a href='#x'>registry</a>") == "<a href='#x'>registry</a>"
    True
    >>> "<a" in link_markup("<div role='list'><b>registry</b></div>")  # not in a list but its items
    False
    >>> "<a" in link_markup("<div role='list'><span role='listitem'>no_kernel</span></div>")
    True
    >>> "<a" in link_markup("<details><summary>registry</summary></details>")
    False
    """
    seen: set[str] = set()
    stack: list[tuple[str, bool | None]] = []
    out: list[str] = []
    for piece in _TAG.split(markup):
        if piece.startswith("<"):
            _linkable(piece, stack)
            out.append(piece)
            continue
        if not piece or not _may_link(stack):
            out.append(piece)
            continue
        last = 0
        for match in _PATTERN.finditer(piece):
            term = _term_of(match.group(0))
            out.append(piece[last : match.start()])
            order = "" if term not in seen else " tabindex='-1'"
            seen.add(term)
            out.append(f"<a class='px-term' href='#{anchor(term)}'{order}>{match.group(0)}</a>")
            last = match.end()
        out.append(piece[last:])
    return "".join(out)


def _may_link(stack: list[tuple[str, bool | None]]) -> bool:
    """Whether text inside the open elements ``stack`` may hold links: no code, link or control
    around it, and the innermost element that decides allows them (a list item inside a list)."""
    if any(name in _NO_LINKS_IN for name, _ in stack):
        return False
    for _, decides in reversed(stack):
        if decides is not None:
            return decides
    return True


def link_terms(widget: Any) -> None:
    """Make every value an HTML widget gets pass through :func:`link_markup` (its current value
    too): its terms link to the glossary whoever writes it."""
    if getattr(widget, "_px_terms_linked", False):
        return
    widget._register_validator(lambda _owner, proposal: link_markup(proposal["value"]), ("value",))
    widget._px_terms_linked = True
    widget.value = link_markup(widget.value)


def glossary_html() -> str:
    """The glossary: every term with its id (the links' target), as a definition list.

    >>> glossary_html().count("<dt ") == len(GLOSSARY)
    True
    """
    entries = "".join(
        f"<dt id='{anchor(term)}' tabindex='-1'>{html.escape(term)}</dt><dd>{html.escape(text)}</dd>"
        for term, text in GLOSSARY.items()
    )
    return (
        "<section class='px-glossary' aria-labelledby='px-glossary-title'>"
        "<h3 id='px-glossary-title'>Words used here</h3>"
        f"<dl>{entries}</dl></section>"
    )
