"""Turning results into what an Output widget shows: figures, tables, messages.

Outputs are replaced atomically (``out.outputs = (bundle,)``), which is safe from
background threads and easy to inspect in tests.  A figure becomes one PNG
``<img>``; an error becomes a short readable message, never a traceback.
"""

from __future__ import annotations

import base64
import html
import io
from typing import Any

#: Resolution of figures in the app (kept low: re-rendering must stay fast).
APP_DPI = 90


def as_figure(obj: Any) -> Any:
    """A matplotlib Figure from a Figure or an Axes (plots return either)."""
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    if isinstance(obj, Figure):
        return obj
    if isinstance(obj, Axes):
        return obj.figure
    if isinstance(obj, list | tuple) and obj and isinstance(obj[0], Axes):
        return obj[0].figure
    raise TypeError(f"expected a matplotlib Figure or Axes, got {type(obj).__name__}")


def figure_bytes(fig: Any, fmt: str = "png", dpi: int = APP_DPI, tight: bool = False) -> bytes:
    """The figure encoded as PNG or SVG bytes (``tight`` crops to the drawn area: one more draw)."""
    if fmt not in ("png", "svg"):
        raise ValueError(f"unknown figure format {fmt!r}; valid formats: png, svg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = as_figure(fig)
    if fig.canvas is None or type(fig.canvas).__name__ == "FigureCanvasBase":
        FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=dpi, bbox_inches="tight" if tight else None)
    return buf.getvalue()


def figure_bundle(fig: Any, alt: str = "figure", dpi: int = APP_DPI) -> dict[str, Any]:
    """A display_data output holding the figure as PNG, twice: ``image/png`` (for code and
    exports) and an ``<img>`` with ``alt`` as its alternative text in ``text/html``, which a
    front end prefers (its own ``image/png`` renderer writes no alt text)."""
    png = base64.b64encode(figure_bytes(fig, "png", dpi)).decode("ascii")
    return {
        "output_type": "display_data",
        "data": {"image/png": png, "text/html": image_html(png, alt), "text/plain": f"<{alt}>"},
        "metadata": {},
    }


def image_html(png: str, alt: str) -> str:
    """An ``<img>`` of base64 PNG data with ``alt`` (escaped) as its alternative text.

    >>> image_html("AAAA", "a <b> plot").split(" src=")[0]
    "<img class='px-figure' alt='a &lt;b&gt; plot'"
    """
    if not png.isascii() or any(c in png for c in "'\"<> "):
        raise ValueError("expected base64 PNG data")
    return (
        f"<img class='px-figure' alt='{html.escape(alt or 'figure', quote=True)}' "
        f"src='data:image/png;base64,{png}' style='max-width:100%;height:auto'/>"
    )


def html_bundle(markup: str, text: str = "") -> dict[str, Any]:
    """A display_data output holding HTML."""
    return {
        "output_type": "display_data",
        "data": {"text/html": markup, "text/plain": text or _strip_tags(markup)},
        "metadata": {},
    }


def message_html(text: str, kind: str = "info", detail: str = "") -> str:
    """A short styled message: ``kind`` in info, warning, error, loading."""
    if kind not in ("info", "warning", "error", "loading"):
        raise ValueError(f"unknown message kind {kind!r}; valid kinds: info, warning, error, loading")
    from explorer.plots.palette import MESSAGE_COLORS as colours

    body = (
        f"<div class='px-msg px-msg-{kind}' style='color:{colours[kind]};padding:4px 0'>{html.escape(text)}"
    )
    if detail:
        body += (
            f"<details><summary>details</summary><pre style='white-space:pre-wrap;font-size:85%'>"
            f"{html.escape(detail)}</pre></details>"
        )
    return body + "</div>"


def error_message(exc: BaseException, context: str = "") -> str:
    """A readable one-liner for an exception: what failed and why, without a traceback."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if len(first) > 300:
        first = first[:300] + "…"
    prefix = f"{context}: " if context else ""
    return (
        f"{prefix}{first}"
        if isinstance(exc, ValueError | TypeError)
        else f"{prefix}{type(exc).__name__}: {first}"
    )


def table_html(frame: Any, max_rows: int = 60) -> str:
    """A pandas DataFrame (or list of dicts) as a compact HTML table; its numeric columns are
    marked for right alignment (:func:`explorer.app.numbers.numeric_column_classes`)."""
    import pandas as pd

    from explorer.app.numbers import numeric_column_classes

    if not isinstance(frame, pd.DataFrame):
        frame = pd.DataFrame(frame)
    shown = frame.head(max_rows)
    aligned = numeric_column_classes([_shown(v) for v in shown.iloc[:, j]] for j in range(len(shown.columns)))
    # shortest round-trip repr: the exact stored value of a float16 input, not 6 rounded digits
    markup = shown.to_html(
        index=False,
        border=0,
        classes=["px-table", *aligned],
        na_rep="",
        escape=True,
        float_format=lambda v: repr(float(v)),
    )
    if len(frame) > max_rows:
        markup += f"<div style='color:#555'>… {len(frame) - max_rows} more rows</div>"
    return f"<div style='max-height:420px;overflow:auto;font-size:90%'>{markup}</div>"


def _shown(value: Any) -> str:
    """A value's text as :func:`table_html` writes it ("" for a missing one)."""
    import pandas as pd

    if value is None or (pd.api.types.is_scalar(value) and bool(pd.isna(value))):
        return ""
    if isinstance(value, float):
        return repr(float(value))
    return str(value)


def download_link(data: bytes, filename: str, mime: str) -> str:
    """An ``<a download>`` link with the data inline (works in JupyterLab and Voila, offline)."""
    encoded = base64.b64encode(data).decode("ascii")
    return (
        f"<a class='px-download' download='{html.escape(filename)}' "
        f"href='data:{mime};base64,{encoded}'>⬇ {html.escape(filename)}</a>"
    )


def _strip_tags(markup: str) -> str:
    import re

    return html.unescape(re.sub(r"<[^>]+>", " ", markup)).strip()[:500]
