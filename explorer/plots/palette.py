"""The one palette of the app and its plots: a colour and a glyph per status, a colour per
precision policy, per format, per backend, and the few neutral colours.

Every plot in :mod:`explorer.plots` and every tab in :mod:`explorer.app` takes its colours from
here, so a status, a policy or a format has the same colour everywhere.

The status colours were chosen by a search over sRGB colours (steps of 1/15) that maximised the
smallest CAM02-UCS distance between any two status colours, and between each of them and white
(an empty cell), in normal vision and under full deuteranopia, protanopia and tritanopia
(colorspacious' ``sRGB1+CVD`` simulation, severity 100), each status kept to a hue family that
hints at its meaning (ok blue-green, no_kernel red, error orange, ...).  ``tests/test_palette.py``
checks the distances.  Colour is never the only cue: each status also has a glyph, drawn in the
cell.

>>> STATUS_GLYPHS["ok"], STATUS_GLYPHS["no_kernel"]
('+', 'N')
>>> status_color("ok") == STATUS_COLORS["ok"], status_color("weird") == UNKNOWN_COLOR
(True, True)
"""

from __future__ import annotations

import math

from explorer.formats import KNOWN_FORMAT_NAMES
from explorer.outcome import STATUSES

#: one colour per status (see the module docstring for how they were chosen)
STATUS_COLORS: dict[str, str] = {
    "ok": "#44bbee",
    "fallback": "#eecc00",
    "no_kernel": "#cc0000",
    "unsupported_dtype": "#552211",
    "no_device": "#999999",
    "not_installed": "#cccccc",
    "crashed": "#110011",
    "timeout": "#1100aa",
    "error": "#dd7722",
    "wrong_result": "#aa3366",
}
#: one glyph per status, drawn in every cell (colour is never the only cue); the CLI's history
#: table uses the same letters for ok, no_kernel and unsupported_dtype
STATUS_GLYPHS: dict[str, str] = {
    "ok": "+",
    "fallback": "~",
    "no_kernel": "N",
    "unsupported_dtype": "U",
    "no_device": "D",
    "not_installed": "I",
    "crashed": "!",
    "timeout": "T",
    "error": "E",
    "wrong_result": "W",
}
#: colour of a cell with no row (the op was not asked for there)
EMPTY_COLOR = "#ffffff"
#: colour and glyph of a status this palette does not know
UNKNOWN_COLOR, UNKNOWN_GLYPH = "#777777", "?"
#: the release history's extra status: the release has no such op, dtype or device type
ABSENT_COLOR, ABSENT_GLYPH = "#eeeeee", "-"

#: one colour per precision policy (Keras' six and the emulated fp8 run): Okabe–Ito colours, and
#: Tol's wine for the float16 policy without loss scaling, which is drawn beside mixed_float16
#: (Okabe–Ito's sky blue was a second blue: 7° of hue and CAM02-UCS ΔE 25 from it; wine is 114°
#: and ΔE 48 away; ``tests/test_a11y.py`` checks the distances)
POLICY_COLORS: dict[str, str] = {
    "float32": "#000000",
    "mixed_float16": "#0072B2",
    "mixed_float16_no_scaling": "#882255",
    "mixed_bfloat16": "#D55E00",
    "float16": "#009E73",
    "bfloat16": "#E69F00",
    "fp8_emulated": "#CC79A7",
}

#: colours cycled over the formats, in :data:`explorer.formats.KNOWN_FORMAT_NAMES` order (the same
#: colours whichever ml_dtypes is installed)
_FORMAT_CYCLE: tuple[str, ...] = (
    "#000000",
    "#555555",
    "#999999",
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#E69F00",
    "#56B4E9",
    "#CC79A7",
    "#F0E442",
    "#882255",
    "#44AA99",
    "#AA4499",
    "#117733",
    "#332288",
    "#DDCC77",
    "#88CCEE",
    "#661100",
)
#: one colour per format: float16 has the colour of the float16 policy, bfloat16 of bfloat16
FORMAT_COLORS: dict[str, str] = {
    name: _FORMAT_CYCLE[i % len(_FORMAT_CYCLE)] for i, name in enumerate(KNOWN_FORMAT_NAMES)
} | {"float32": POLICY_COLORS["float32"], "float16": "#009E73", "bfloat16": "#E69F00"}

#: one colour per block format (explorer.blocks.BLOCK_FORMAT_NAMES) and per-tensor baseline:
#: Okabe–Ito colours, distinct within the set
BLOCK_FORMAT_COLORS: dict[str, str] = {
    "mxfp8_e4m3": "#0072B2",
    "mxfp8_e5m2": "#56B4E9",
    "mxfp6_e2m3": "#009E73",
    "mxfp6_e3m2": "#117733",
    "mxfp4_e2m1": "#D55E00",
    "mxint8": "#CC79A7",
    "nvfp4": "#E69F00",
}

#: colour and marker per backend (accuracy plots)
BACKEND_STYLES: dict[str, tuple[str, str]] = {
    "numpy": ("#0072B2", "o"),
    "tensorflow": ("#D55E00", "x"),
    "emulated": ("#009E73", "+"),
    "torch": ("#CC79A7", "s"),
    "jax": ("#E69F00", "^"),
}

#: colours of the regions of a number line (ranges plots)
RANGE_KIND_COLORS: dict[str, str] = {
    "ok": "#c7e9c0",
    "overflow": "#cc0000",
    "underflow": "#0072B2",
    "subnormal": "#E69F00",
    "nan": "#762a83",
    "flush_to_zero": "#525252",
}
#: colours of a bit pattern's fields
BIT_FIELD_COLORS: dict[str, str] = {"sign": "#cc0000", "exponent": "#0072B2", "mantissa": "#009E73"}
#: colours of the accumulators of an accumulation study
ACCUMULATOR_COLORS: dict[str, str] = {"format": "#cc0000", "float32": "#0072B2", "float64": "#1a1a1a"}

#: neutral colours: text, lines, highlights
INK = "#000000"
PAPER = "#ffffff"
MUTED_TEXT = "#555555"
GUIDE_LINE = "#808080"
OUTLINE = "#777777"
HIGHLIGHT = "#cc0000"
#: colours of the app's messages by kind
MESSAGE_COLORS: dict[str, str] = {
    "info": "#1f5fa8",
    "warning": "#8a5a00",
    "error": "#a00000",
    "loading": MUTED_TEXT,
}


def status_color(status: str) -> str:
    """The colour of a status (:data:`UNKNOWN_COLOR` for one not in :data:`STATUS_COLORS`)."""
    return STATUS_COLORS.get(status, UNKNOWN_COLOR)


def status_glyph(status: str) -> str:
    """The glyph of a status (``?`` for one not in :data:`STATUS_GLYPHS`).

    >>> status_glyph("error"), status_glyph("nonsense")
    ('E', '?')
    """
    return STATUS_GLYPHS.get(status, UNKNOWN_GLYPH)


def policy_color(policy: str) -> str:
    """The colour of a precision policy (every panel of the training tab uses it).

    >>> policy_color("mixed_float16")
    '#0072B2'
    """
    return POLICY_COLORS.get(policy, UNKNOWN_COLOR)


#: line style per policy, so that identical curves stay visible: float32, the reference, is drawn
#: dashed on top; the two float16 policies differ in style as well
POLICY_LINESTYLES: dict[str, str | tuple[int, tuple[int, ...]]] = {
    "float32": "--",
    "mixed_float16": "-",
    "mixed_float16_no_scaling": ":",
    "mixed_bfloat16": "-",
    "float16": "-.",
    "bfloat16": "-.",
    "fp8_emulated": (0, (5, 1, 1, 1)),
}


#: marker per policy (a point of one policy under another's stays told apart by its shape; float32's
#: is drawn open on top, so a point it covers shows through it)
POLICY_MARKERS: dict[str, str] = {
    "float32": "o",
    "mixed_float16": "s",
    "mixed_float16_no_scaling": "^",
    "mixed_bfloat16": "D",
    "float16": "v",
    "bfloat16": "P",
    "fp8_emulated": "X",
}


def policy_marker_style(policy: str) -> dict[str, object]:
    """Marker, size and fill of a policy's points: :data:`POLICY_MARKERS`; float32, drawn on
    top, is a larger open circle.

    >>> policy_marker_style("float32")["markerfacecolor"], policy_marker_style("float16")["marker"]
    ('none', 'v')
    """
    top = policy == "float32"
    return {
        "marker": POLICY_MARKERS.get(policy, "o"),
        "markersize": 9 if top else 5,
        "markerfacecolor": "none" if top else policy_color(policy),
        "markeredgewidth": 1.6 if top else 1.0,
    }


def policy_style(policy: str) -> dict[str, object]:
    """Colour, line style, width and drawing order of a policy's lines: float32 on top.

    >>> policy_style("float32")["linestyle"], policy_style("float32")["zorder"]
    ('--', 3)
    """
    top = policy == "float32"
    return {
        "color": policy_color(policy),
        "linestyle": POLICY_LINESTYLES.get(policy, "-"),
        "linewidth": 2.0 if top else 1.5,
        "zorder": 3 if top else 2,
    }


def format_color(name: str) -> str:
    """The colour of a format (:data:`explorer.formats.FORMAT_NAMES`)."""
    return FORMAT_COLORS.get(name, UNKNOWN_COLOR)


def text_color(background: str) -> str:
    """Black or white, whichever reads better on ``background`` (``#rrggbb``): the one with the
    higher WCAG contrast ratio.

    >>> text_color("#000000"), text_color("#ffffff"), text_color(STATUS_COLORS["no_kernel"])
    ('#ffffff', '#000000', '#ffffff')
    """
    luminance = relative_luminance(background)
    on_black = (luminance + 0.05) / 0.05
    on_white = 1.05 / (luminance + 0.05)
    return INK if on_black >= on_white else PAPER


def relative_luminance(color: str) -> float:
    """WCAG relative luminance of ``#rrggbb``.

    >>> relative_luminance("#ffffff"), relative_luminance("#000000")
    (1.0, 0.0)
    """
    value = color.lstrip("#")
    if len(value) != 6:
        raise ValueError(f"expected a #rrggbb colour, got {color!r}")
    channels = [int(value[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return round(0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2], 6)


#: the speed layer's diverging scale (ColorBrewer's RdBu ends, colour-blind safe): a cell as fast as
#: float32 is the neutral centre, faster cells go blue, slower ones red
SPEED_FASTER, SPEED_NEUTRAL, SPEED_SLOWER = "#2166ac", "#f7f7f7", "#b2182b"
#: ratios to float32 of ``1 / SPEED_SPAN`` and ``SPEED_SPAN`` reach the scale's ends (beyond: clipped)
SPEED_SPAN = 8.0
#: steps on each side of the centre when the scale is drawn in bands (the heatmap's colour scale)
SPEED_STEPS = 6


def speed_position(ratio: float, span: float = SPEED_SPAN) -> float:
    """Where a ratio to float32 sits on the speed scale: ``log(ratio) / log(span)`` clipped to
    [-1, 1]; 0 is 1x, -1 is ``span`` times faster, +1 ``span`` times slower.

    >>> [round(speed_position(r), 6) for r in (1.0, 2.0, 0.5, 100.0)]
    [0.0, 0.333333, -0.333333, 1.0]
    """
    if not (ratio > 0 and math.isfinite(ratio)):
        raise ValueError(f"a ratio to float32 is a positive finite number, got {ratio!r}")
    return max(-1.0, min(1.0, math.log(ratio) / math.log(span)))


def speed_color(ratio: float, span: float = SPEED_SPAN) -> str:
    """The colour of a ratio to float32 on the diverging speed scale: :data:`SPEED_NEUTRAL` at 1x,
    towards :data:`SPEED_FASTER` below and :data:`SPEED_SLOWER` above (sRGB interpolation by
    :func:`speed_position`), so that ``r`` and ``1 / r`` lie equally far from the centre.

    >>> speed_color(1.0) == SPEED_NEUTRAL, speed_color(8.0) == SPEED_SLOWER
    (True, True)
    >>> speed_color(0.125) == SPEED_FASTER
    True
    """
    t = speed_position(ratio, span)
    end = SPEED_SLOWER if t > 0 else SPEED_FASTER
    a, b = _channels(SPEED_NEUTRAL), _channels(end)
    mixed = [round(x + abs(t) * (y - x)) for x, y in zip(a, b, strict=True)]
    return "#" + "".join(f"{c:02x}" for c in mixed)


def speed_level(ratio: float, steps: int = SPEED_STEPS, span: float = SPEED_SPAN) -> int:
    """The band of a ratio when the scale is drawn in ``2 * steps + 1`` bands: from ``-steps``
    (``span`` times faster or more) through 0 (about 1x) to ``steps``.

    >>> speed_level(1.0), speed_level(8.0), speed_level(1 / 8), speed_level(1.05)
    (0, 6, -6, 0)
    """
    return round(speed_position(ratio, span) * steps)


def speed_band_colors(steps: int = SPEED_STEPS, span: float = SPEED_SPAN) -> list[str]:
    """The colours of the bands ``-steps .. steps`` (:func:`speed_level`), fastest first.

    >>> bands = speed_band_colors(2)
    >>> len(bands), bands[2] == SPEED_NEUTRAL, bands[0] == SPEED_FASTER
    (5, True, True)
    """
    return [speed_color(span ** (k / steps), span) for k in range(-steps, steps + 1)]


def _channels(color: str) -> list[int]:
    value = color.lstrip("#")
    return [int(value[i : i + 2], 16) for i in (0, 2, 4)]


assert set(STATUS_COLORS) == set(STATUSES) == set(STATUS_GLYPHS), "one colour and glyph per status"
