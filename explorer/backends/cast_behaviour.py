"""What a backend's cast to a format does beyond the format's range, measured by casting.

Each backend casts float64 values to a format its own way (:meth:`Backend.cast_values`):
PyTorch's ``Tensor.to``, ``tf.cast``, ``jax.numpy``'s ``astype``, ONNX's ``Cast`` node,
NumPy's and ml_dtypes' ``astype``.  Above the format's largest finite value, a cast may give
infinity, NaN, or the largest value (saturate); the format table says what the *format*
reserves (:attr:`~explorer.formats.Format.overflow`), not what each framework's cast does.
:func:`measure` casts the values of :func:`probe_values` and says what came back:

- **above max**: values past the rounding boundary above max (max plus three quarters of the top
  step, twice max, a thousand times max): ``inf``, ``nan``, ``saturate`` (max) or ``mixed``;
- **inf**: what infinity itself becomes;
- **below the smallest subnormal**: a quarter, a half and three quarters of it: ``round`` (0, 0
  and the smallest subnormal: round to nearest even), ``flush`` (all 0, and the smallest
  subnormal itself 0 too: subnormals flushed), else ``other``.

>>> from explorer.formats import resolve
>>> import ml_dtypes
>>> fmt = resolve("float8_e4m3fn")
>>> probe_values(fmt)[0].tolist()
[472.0, 896.0, 448000.0]
>>> b = measure(fmt, lambda v: v.astype(ml_dtypes.float8_e4m3fn).astype(np.float64))
>>> b.above_max, b.inf, b.below_subnormal
('nan', 'nan', 'round')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from explorer.formats import Format

#: the issue's values for float8_e4m3fn (max 448), cast as they are in every format that
#: reaches them: what each framework gives past max, at max's rounding boundary (464), and for inf
ISSUE_VALUES: tuple[float, ...] = (300.0, 460.0, 500.0, 1000.0, 1e6, float("inf"))


@dataclass(frozen=True)
class CastBehaviour:
    """What one backend's cast to one format gave (each field a word, plus what it measured)."""

    #: the format's name
    format: str
    #: finite values past max's rounding boundary: ``inf``, ``nan``, ``saturate``, ``mixed``
    above_max: str
    #: +inf: ``inf``, ``nan``, ``saturate``, or ``other``
    inf: str
    #: values below the smallest subnormal: ``round``, ``flush``, ``other``
    below_subnormal: str
    #: the values cast (positive; finite ones above max, then inf, then the tiny ones)
    inputs: tuple[float, ...]
    #: what each came back as
    outputs: tuple[float, ...]
    #: anything further the backend measured (ONNX's Cast with saturate=0 ...)
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        """Plain data (JSON)."""
        return asdict(self)

    def summary(self) -> str:
        """One line: ``"above max: saturate (to 448); inf: saturate; below subnormal: round"``."""
        above = {"saturate": f"saturate (to {_num(self._max())})"}.get(self.above_max, self.above_max)
        return f"above max: {above}; inf: {self.inf}; below the smallest subnormal: {self.below_subnormal}"

    def _max(self) -> float:
        return max((o for o in self.outputs if np.isfinite(o)), default=float("nan"))


def _num(value: float) -> str:
    return f"{value:.6g}"


def probe_values(fmt: Format) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The positive values cast: (finite ones past max's rounding boundary, ``[inf]``, tiny ones:
    a quarter, half and three quarters of the smallest subnormal, and that subnormal)."""
    above = np.array([fmt.max + 0.75 * _top_step(fmt), 2 * fmt.max, 1e3 * fmt.max], dtype=np.float64)
    above = above[np.isfinite(above)]
    tiny = fmt.smallest_subnormal * np.array([0.25, 0.5, 0.75, 1.0])
    return above, np.array([np.inf]), tiny


def _top_step(fmt: Format) -> float:
    """The spacing of the format's values just below max (what the next binade step would be)."""
    exponent = np.floor(np.log2(fmt.max))
    return float(2.0 ** (exponent - fmt.mantissa_bits))


def _word(got: np.ndarray, fmt_max: float) -> str:
    if np.all(np.isnan(got)):
        return "nan"
    if np.all(np.isposinf(got)):
        return "inf"
    if np.all(got == fmt_max):
        return "saturate"
    return "mixed"


def measure(fmt: Format, cast: Callable[[np.ndarray], np.ndarray], note: str = "") -> CastBehaviour:
    """Cast :func:`probe_values` of ``fmt`` with ``cast`` (float64 in, float64 values out) and
    classify what came back."""
    above, inf, tiny = probe_values(fmt)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        values = np.concatenate([above, inf, tiny])
        got = np.asarray(cast(values), dtype=np.float64)
    got_above, got_inf, got_tiny = got[: above.size], got[above.size], got[above.size + 1 :]
    inf_word = _word(np.array([got_inf]), fmt.max)
    quarter, half, three, smallest = got_tiny
    if quarter == 0 and half == 0 and three == fmt.smallest_subnormal and smallest == fmt.smallest_subnormal:
        below = "round"
    elif quarter == half == three == smallest == 0:
        below = "flush"
    else:
        below = "other"
    return CastBehaviour(
        fmt.name,
        _word(got_above, fmt.max) if above.size else "none above max",
        "other" if inf_word == "mixed" else inf_word,
        below,
        tuple(float(v) for v in values),
        tuple(float(v) for v in got),
        note,
    )
