"""Figures as inline SVG: text stays text (sharp, searchable, readable at any width), dense
point clouds stay small (the artists drawn with ``rasterized=True`` are one embedded PNG).

The markup is matplotlib's SVG, sanitized: only drawing elements are kept (no ``<style>``, which
would apply to the whole page, no metadata, no scripts, no event attributes), links only to the
figure's own parts or to embedded PNG data; the figure's alternative text becomes its ``<title>``
and ``aria-label``.
"""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from typing import Any

_SVG = "http://www.w3.org/2000/svg"
_XLINK = "http://www.w3.org/1999/xlink"
#: the SVG elements a matplotlib figure draws with (everything else is dropped)
ALLOWED_TAGS = frozenset(
    {"svg", "g", "defs", "path", "use", "image", "text", "tspan", "clipPath", "rect", "circle"}
    | {"ellipse", "line", "polyline", "polygon"}
)
#: attributes kept (``style`` is kept: matplotlib's per-element presentation, no selectors)
ALLOWED_ATTRIBUTES = frozenset(
    {"id", "d", "x", "y", "width", "height", "viewBox", "transform", "style", "clip-path", "href"}
    | {"points", "x1", "x2", "y1", "y2", "cx", "cy", "r", "rx", "ry", "preserveAspectRatio"}
)
#: resolution of the rasterized artists (points) inside the SVG
RASTER_DPI = 110


def figure_svg(fig: Any) -> bytes:
    """The figure as SVG bytes, its text as ``<text>`` elements (not paths)."""
    import matplotlib as mpl
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if fig.canvas is None or type(fig.canvas).__name__ == "FigureCanvasBase":
        FigureCanvasAgg(fig)
    buf = io.BytesIO()
    with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": None}):
        fig.savefig(buf, format="svg", dpi=RASTER_DPI)
    return buf.getvalue()


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _safe_link(value: str) -> bool:
    return value.startswith("#") or value.startswith("data:image/png;base64,")


def sanitize(svg: bytes | str) -> ET.Element:
    """The ``<svg>`` tree with only :data:`ALLOWED_TAGS` and :data:`ALLOWED_ATTRIBUTES`, links
    only within the figure or to PNG data, and no text outside ``<text>``/``<tspan>``.

    >>> tree = sanitize('<svg xmlns="http://www.w3.org/2000/svg" onload="x()"><script>x()</script>'
    ...                 '<a href="javascript:x()"><text x="1" onclick="y()">a &lt; b</text></a>'
    ...                 '<use href="https://evil/x.svg#a"/></svg>')
    >>> ET.tostring(tree, encoding="unicode")
    '<svg><use /></svg>'
    """
    root = ET.fromstring(svg)
    if _local(root.tag) != "svg":
        raise ValueError(f"expected an <svg> document, got <{_local(root.tag)}>")

    def clean(element: ET.Element) -> None:
        element.tag = _local(element.tag)
        for name in list(element.attrib):
            value = element.attrib.pop(name)
            local = _local(name)
            if local not in ALLOWED_ATTRIBUTES or (local == "href" and not _safe_link(value)):
                continue
            if "url(" in value and not value.replace(" ", "").startswith("url(#"):
                continue
            element.attrib[local] = value
        if element.tag not in ("text", "tspan"):
            element.text = None
        for child in list(element):
            if _local(child.tag) not in ALLOWED_TAGS:
                element.remove(child)
            else:
                clean(child)
                if element.tag not in ("text", "tspan"):
                    child.tail = None

    clean(root)
    return root


def svg_html(fig: Any, alt: str, css_class: str = "px-figure px-svg") -> str:
    """The figure as sanitized inline SVG markup that scales to its container's width (at most
    its own size), with ``alt`` as its title and accessible name."""
    root = sanitize(figure_svg(fig))
    view = root.attrib.get("viewBox", "")
    width = float(view.split()[2]) if len(view.split()) == 4 else 0.0
    for name in ("width", "height"):
        root.attrib.pop(name, None)
    root.attrib.update(
        {
            "class": css_class,
            "role": "img",
            "aria-label": alt or "figure",
            "preserveAspectRatio": "xMinYMin meet",
            # user units are points: the figure's own size in CSS px is 4/3 of them
            "style": f"width:100%;max-width:{width * 4 / 3:.0f}px;height:auto;display:block",
        }
    )
    title = ET.Element("title")
    title.text = alt or "figure"
    root.insert(0, title)
    return ET.tostring(root, encoding="unicode", short_empty_elements=True)


__all__ = ["ALLOWED_TAGS", "figure_svg", "sanitize", "svg_html"]
