"""The palette (explorer/plots/palette.py): status colours stay apart under simulated colour-vision
deficiencies, every status has its own glyph, and a policy has one colour in every training panel.

Distances are CAM02-UCS ΔE (colorspacious), after simulating full deuteranopia, protanopia and
tritanopia (``sRGB1+CVD``, severity 100).  The threshold, 12, is well above the ~1-2 ΔE of a just
noticeable difference in CAM02-UCS and above the ~10 at which two flat patches of a small heatmap
are told apart at a glance; the palette reaches about 15.8 at worst (printed by ``-s``).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from explorer.outcome import STATUSES
from explorer.plots import palette

#: minimum CAM02-UCS ΔE between any two status colours (and each against an empty white cell)
MIN_DELTA_E = 12.0
CVD_TYPES = ("deuteranomaly", "protanomaly", "tritanomaly")


def _rgb(colour: str) -> np.ndarray:
    value = colour.lstrip("#")
    return np.array([int(value[i : i + 2], 16) / 255 for i in (0, 2, 4)])


def _seen(colours: list[str], cvd: str | None) -> np.ndarray:
    from colorspacious import cspace_convert

    rgb = np.array([_rgb(c) for c in colours])
    if cvd is not None:
        rgb = np.clip(
            cspace_convert(rgb, {"name": "sRGB1+CVD", "cvd_type": cvd, "severity": 100}, "sRGB1"), 0, 1
        )
    return np.asarray(cspace_convert(rgb, "sRGB1", "CAM02-UCS"))


def _closest_pair(colours: dict[str, str], cvd: str | None) -> tuple[float, str, str]:
    names = list(colours)
    seen = _seen(list(colours.values()), cvd)
    return min(
        (float(np.linalg.norm(seen[a] - seen[b])), names[a], names[b])
        for a, b in itertools.combinations(range(len(names)), 2)
    )


@pytest.mark.parametrize("cvd", [None, *CVD_TYPES])
def test_status_colours_stay_apart_under_colour_vision_deficiencies(cvd: str | None) -> None:
    colours = {s: palette.STATUS_COLORS[s] for s in STATUSES} | {"(empty cell)": palette.EMPTY_COLOR}
    distance, a, b = _closest_pair(colours, cvd)
    print(f"{cvd or 'normal vision'}: closest pair {a} / {b}, CAM02-UCS ΔE {distance:.1f}")
    assert distance >= MIN_DELTA_E, (cvd, a, b, distance)


def test_the_old_palette_fails_the_same_check() -> None:
    """The check bites: the previous colours (ok and no_kernel olive, error and fallback merged
    under deuteranopia) fall far below the threshold."""
    old = {"ok": "#1a9850", "fallback": "#a6d96a", "no_kernel": "#d73027", "error": "#fdae61"}
    assert _closest_pair(old, "deuteranomaly")[0] < MIN_DELTA_E


def test_every_status_has_one_colour_and_a_distinct_glyph() -> None:
    assert set(palette.STATUS_COLORS) == set(STATUSES) == set(palette.STATUS_GLYPHS)
    glyphs = [palette.STATUS_GLYPHS[s] for s in STATUSES]
    assert len(set(glyphs)) == len(glyphs) and all(g.strip() for g in glyphs)
    assert len(set(palette.STATUS_COLORS.values())) == len(STATUSES)
    assert palette.UNKNOWN_GLYPH not in glyphs and palette.ABSENT_GLYPH not in glyphs


def test_glyph_text_reads_on_its_cell() -> None:
    """WCAG contrast of the glyph colour on each status colour, computed here from the luminance."""

    def luminance(colour: str) -> float:
        c = _rgb(colour)
        lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
        return float(0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2])

    for status, colour in palette.STATUS_COLORS.items():
        a, b = luminance(colour), luminance(palette.text_color(colour))
        ratio = (max(a, b) + 0.05) / (min(a, b) + 0.05)
        assert ratio >= 4.5, (status, colour, ratio)


def test_every_policy_and_format_has_a_colour() -> None:
    from explorer.formats import FORMAT_NAMES
    from explorer.training.config import ALL_POLICY_NAMES

    assert set(ALL_POLICY_NAMES) <= set(palette.POLICY_COLORS)
    assert len({palette.policy_color(p) for p in ALL_POLICY_NAMES}) == len(ALL_POLICY_NAMES)
    assert set(FORMAT_NAMES) <= set(palette.FORMAT_COLORS)


def _fake_run(policy: str) -> Any:
    from types import SimpleNamespace

    epochs = [SimpleNamespace(epoch=e, loss=1.0 / (e + 1), loss_scale=2.0**15) for e in range(3)]
    steps = [
        SimpleNamespace(step=s, loss_scale=2.0**15, skipped=False, grad_zero_fraction=0.1) for s in range(4)
    ]
    return SimpleNamespace(policy=policy, epochs=epochs, steps=steps)


def test_a_policy_has_the_same_colour_in_every_training_panel() -> None:
    """Inspect the drawn Line2D objects of the curves, loss-scale and gradient panels: each line
    labelled with a policy has that policy's palette colour."""
    from matplotlib.colors import to_hex

    from explorer.plots import training

    runs = [_fake_run("mixed_float16"), _fake_run("float32"), _fake_run("bfloat16")]
    axes = [
        training.plot_curves(runs, "loss"),
        training.plot_loss_scale(runs),
        training.plot_grad_zero_fraction(runs),
    ]
    seen: dict[str, set[str]] = {}
    for ax in axes:
        for line in ax.get_lines():
            if line.get_label() in palette.POLICY_COLORS:
                seen.setdefault(str(line.get_label()), set()).add(to_hex(line.get_color()))
    assert set(seen) == {"mixed_float16", "float32", "bfloat16"}
    for policy, colours in seen.items():
        assert colours == {palette.POLICY_COLORS[policy].lower()}, (policy, colours)


# ------------------------------------------------------------------------------- the speed scale

RATIOS = (1.25, 2.0, 4.0, 8.0)


def test_speed_scale_is_centred_on_1x_and_log_symmetric() -> None:
    """The position is log(ratio) / log(8) (computed here with log2), so r and 1/r sit at opposite
    ends of the same distance; 1x is the neutral centre and the ends are reached at 8x and 1/8x."""
    import math

    assert palette.speed_color(1.0) == palette.SPEED_NEUTRAL
    for r in RATIOS:
        assert palette.speed_position(r) == pytest.approx(math.log2(r) / 3)
        assert palette.speed_position(1 / r) == pytest.approx(-math.log2(r) / 3)
        assert palette.speed_level(r) == -palette.speed_level(1 / r)
    assert palette.speed_color(64.0) == palette.speed_color(8.0) == palette.SPEED_SLOWER
    assert palette.speed_color(1 / 64) == palette.SPEED_FASTER
    with pytest.raises(ValueError, match="positive finite"):
        palette.speed_position(0.0)


def test_speed_colours_of_r_and_1_over_r_are_equally_far_from_the_centre() -> None:
    """In CAM02-UCS: the same lightness (within 4 J') and distances from the neutral centre within
    20% of each other; the distance grows with the ratio."""
    centre = _seen([palette.SPEED_NEUTRAL], None)[0]
    last = 0.0
    for r in RATIOS:
        slower, faster = _seen([palette.speed_color(r), palette.speed_color(1 / r)], None)
        assert abs(slower[0] - faster[0]) < 4.0, (r, slower[0], faster[0])
        d_slow, d_fast = np.linalg.norm(slower - centre), np.linalg.norm(faster - centre)
        assert abs(d_slow - d_fast) <= 0.2 * max(d_slow, d_fast), (r, d_slow, d_fast)
        assert min(d_slow, d_fast) > last
        last = min(d_slow, d_fast)


@pytest.mark.parametrize("cvd", [None, *CVD_TYPES])
def test_faster_and_slower_stay_apart_under_colour_vision_deficiencies(cvd: str | None) -> None:
    """From 2x on, a cell r times slower and one r times faster are MIN_DELTA_E apart under each
    simulated deficiency, and each is told from the 1x centre."""
    for r in (2.0, 4.0, 8.0):
        colours = {
            "slower": palette.speed_color(r),
            "faster": palette.speed_color(1 / r),
            "1x": palette.SPEED_NEUTRAL,
        }
        distance, a, b = _closest_pair(colours, cvd)
        assert distance >= MIN_DELTA_E, (cvd, r, a, b, distance)


def test_ratio_text_reads_on_every_speed_band() -> None:
    for colour in palette.speed_band_colors():
        a, b = palette.relative_luminance(colour), palette.relative_luminance(palette.text_color(colour))
        assert (max(a, b) + 0.05) / (min(a, b) + 0.05) >= 4.5, colour
