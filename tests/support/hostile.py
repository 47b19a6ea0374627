"""Hostile snapshot content for the escaping tests, and an HTML checker that does not trust the app.

Every payload, if it ever ran, would bump ``window.top.__px_pwned`` and try to write
``pwned.txt`` through JupyterLab's contents API: the browser tests assert neither
happened.  :func:`dangerous_markup` parses HTML with the standard library's parser
(not the code under test) and lists every element or attribute that could run script.
"""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

#: what a payload would run: count itself, then write a file through JupyterLab's contents API
ACTION = (
    "window.top.__px_pwned=(window.top.__px_pwned||0)+1;"
    "fetch('/api/contents/pwned.txt',{method:'PUT',headers:{'Content-Type':'application/json'},"
    'body:JSON.stringify({type:"file",format:"text",content:"pwned"})});'
)
_JS = f"eval(atob(`{base64.b64encode(ACTION.encode()).decode()}`))"

#: markup that runs script if inserted unescaped, in the contexts the app uses (element text,
#: double- and single-quoted attributes, a <style> block)
PAYLOADS: tuple[str, ...] = (
    f"<script>{_JS}</script>",
    f"<img src=x onerror={_JS}>",
    f'<iframe srcdoc="<script>{_JS}</script>"></iframe>',
    f'"><svg onload={_JS}>',
    f"'><svg onload={_JS}>",
    f"</style></title><img src=x onerror={_JS}>",
)
#: one string holding every payload (fields that get one value)
ALL_PAYLOADS = " ".join(PAYLOADS)
#: a short payload for name-like columns, whose length a snapshot caps
SHORT_PAYLOAD = "<svg onload=top.__px_pwned=1>"

#: columns a valid snapshot row has: free text (any string passes validation) and the
#: columns whose values are checked against known names
FREE_TEXT = ("error", "explanation", "workaround", "workaround_how", "detail", "disagreement")
#: name-like free columns (short values)
NAMES = ("raw_op", "tf_public", "group")
ENUMERATED = ("backend", "dtype", "device", "mode", "status")


def row(**values: Any) -> dict[str, Any]:
    """A valid snapshot row for ``range`` (the app's default op) in float16 on the CPU registry."""
    base: dict[str, Any] = {
        "backend": "tensorflow",
        "op": "range",
        "raw_op": "Range",
        "dtype": "float16",
        "device": "CPU",
        "mode": "registry",
        "status": "no_kernel",
        "error": "",
        "explanation": "",
        "workaround": "",
        "group": "creation",
        "tf_public": "tf.range",
        "declared": "no_kernel",
        "disagreement": "",
        "detail": "",
        "workaround_how": "",
        "ran_on": None,
        "result_dtype": None,
        "seconds": 0.0,
        "cached": False,
    }
    base.update(values)
    return base


def snapshot(rows: list[dict[str, Any]], environment: Any = None) -> dict[str, Any]:
    """A snapshot document (the layout ``save_snapshot`` writes)."""
    env = environment if environment is not None else {"hostname": SHORT_PAYLOAD, "note": ALL_PAYLOADS}
    return {"kind": "precision-explorer/kernels", "version": 1, "environment": env, "rows": rows}


def hostile_valid_snapshot() -> dict[str, Any]:
    """A snapshot that passes validation, with every payload in every free-text column, for the
    rows the app shows by default (range; float16 and bfloat16; registry CPU and XLA; eager CPU)."""
    text = {column: ALL_PAYLOADS for column in FREE_TEXT}
    text.update({column: SHORT_PAYLOAD for column in NAMES})
    rows = [
        row(dtype=dtype, device=device, mode=mode, **text)
        for dtype in ("float16", "bfloat16")
        for device, mode in (("CPU", "registry"), ("XLA_CPU_JIT", "registry"), ("CPU", "eager"))
    ]
    rows.append(row(op=SHORT_PAYLOAD, **text))  # an op this machine's catalog does not know
    return snapshot(rows)


def hostile_invalid_snapshots() -> dict[str, dict[str, Any]]:
    """One snapshot per checked column, with the payloads as that column's value (must be refused)."""
    return {column: snapshot([row(**{column: SHORT_PAYLOAD})]) for column in ENUMERATED}


def write(path: Path, document: dict[str, Any]) -> Path:
    """Write a snapshot document as JSON; returns the path."""
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "iframe", "svg", "object", "embed", "frame", "math", "base", "meta", "link"):
            self.found.append(f"<{tag}>")
        if tag == "img" and not any(k == "src" and (v or "").startswith("data:image/") for k, v in attrs):
            self.found.append("<img> with a non-data src")
        for name, value in attrs:
            self.text.append(value or "")
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}=...>")
            if name in ("href", "src", "srcdoc", "action", "formaction") and "javascript:" in (value or ""):
                self.found.append(f"<{tag} {name}=javascript:...>")
            if name == "srcdoc":
                self.found.append(f"<{tag} srcdoc>")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def dangerous_markup(markup: str) -> list[str]:
    """Elements and attributes in ``markup`` that could run script (empty when it is safe)."""
    parser = _Collector()
    parser.feed(markup)
    parser.close()
    return parser.found


def visible_text(markup: str) -> str:
    """The decoded text and attribute values of ``markup`` (where an escaped payload shows up)."""
    parser = _Collector()
    parser.feed(markup)
    parser.close()
    return " ".join(parser.text)
