"""Emulated fp8 training of the digits MLP in NumPy + ml_dtypes.

The MLP of ``explorer.training`` (60-64-64-10, ReLU, softmax
cross-entropy, Adam on float32 master weights) is trained with every matrix
multiply fed fp8 inputs, as NVIDIA TransformerEngine does on Hopper:

* forward: the activations ``x`` and weights ``w`` of each layer are scaled and
  rounded to ``float8_e4m3fn``; ``y = (q_x @ q_w) / (s_x * s_w)`` accumulates in
  float32;
* backward: the output gradient ``dy`` is scaled and rounded to ``float8_e5m2``;
  ``dw = q_x.T @ q_dy / (s_x * s_dy)`` and ``dx = q_dy @ q_w.T / (s_dy * s_w)``
  reuse the forward fp8 copies.  Biases, softmax, loss and Adam stay float32.

Scaling (one scale per tensor site, e.g. ``layer0.x``):

``delayed``
    TransformerEngine's ``DelayedScaling`` recipe: every step records the
    tensor's amax in a history of ``amax_history_len`` steps; the scale used at
    the next step is ``fp8_max / max(history) / 2**margin`` (the first step uses
    1).  A value beyond the range at the current step saturates to ``fp8_max``.
``none``
    scale 1 everywhere (values still saturate instead of becoming NaN/inf).
``float32``
    no fp8 at all: the reference run, same initial weights, same batches.

``stochastic_rounding=True`` rounds the gradients (e5m2) with
``explorer.rounding.round_to(..., mode="stochastic")`` instead of nearest-even.

>>> from explorer.training.fp8 import quantize
>>> import numpy as np
>>> q = quantize(np.array([0.3, 1000.0]), "float8_e4m3fn", scale=1.0)
>>> q.astype(np.float32).tolist()
[0.3125, 448.0]
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from explorer.formats import resolve
from explorer.rounding import round_to

SCALING_MODES: tuple[str, ...] = ("delayed", "none", "float32")
FORWARD_FORMAT = "float8_e4m3fn"
BACKWARD_FORMAT = "float8_e5m2"
#: largest ``margin`` (powers of two of headroom below the format's max): E5M2 spans 2**32
#: from its smallest subnormal to its max, so with a larger margin every scaled value of a
#: tensor would fall below the smallest fp8 value
MAX_MARGIN = 32


def quantize(
    values: np.ndarray,
    fmt: str,
    scale: float,
    *,
    stochastic: bool = False,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Round ``values * scale`` to ``fmt`` (saturating at its max); array in the fp8 dtype.

    Nearest-even unless ``stochastic``; the caller divides by ``scale`` after the matmul.
    """
    f = resolve(fmt)
    if not scale > 0 or not np.isfinite(scale):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    scaled = np.clip(np.asarray(values, dtype=np.float32) * np.float32(scale), -f.max, f.max)
    if stochastic:
        return round_to(scaled, f, mode="stochastic", rng=rng)
    return round_to(scaled, f)


class DelayedScaler:
    """Per-tensor scale from an amax history (TransformerEngine's delayed scaling).

    ``scale`` is the one to use now; ``update(amax)`` records this step's amax
    and computes the next scale as ``fp8_max / max(history) / 2**margin``.
    With ``enabled=False`` the scale stays 1.
    """

    def __init__(self, fmt: str, history_len: int = 16, margin: int = 0, enabled: bool = True) -> None:
        if history_len < 1:
            raise ValueError(f"history_len must be >= 1, got {history_len}")
        self.fmt = resolve(fmt)
        self.margin = margin
        self.enabled = enabled
        self.history: deque[float] = deque(maxlen=history_len)
        self.scale = 1.0

    def update(self, amax: float) -> None:
        """Record this step's amax and set the scale for the next step."""
        self.history.append(float(amax))
        if not self.enabled:
            return
        top = max(self.history)
        if top > 0 and np.isfinite(top):
            self.scale = float(self.fmt.max / top / 2.0**self.margin)


@dataclass(frozen=True)
class Fp8Config:
    """An emulated fp8 (or the float32 reference) run."""

    scaling: str = "delayed"
    stochastic_rounding: bool = False
    amax_history_len: int = 16
    margin: int = 0
    epochs: int = 10
    batch_size: int = 64
    learning_rate: float = 1e-3
    seed: int = 0
    #: multiply the loss by this (e.g. 2**-10 shows what scaling buys for e5m2 gradients)
    loss_multiplier: float = 1.0
    max_train_samples: int | None = None
    forward_format: str = FORWARD_FORMAT
    backward_format: str = BACKWARD_FORMAT

    def validated(self) -> Fp8Config:
        """This config checked; ValueError naming the valid choices."""
        if self.scaling not in SCALING_MODES:
            raise ValueError(f"unknown scaling {self.scaling!r}; valid: {', '.join(SCALING_MODES)}")
        for name in ("epochs", "batch_size", "amax_history_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name in ("learning_rate", "loss_multiplier"):
            value = getattr(self, name)
            number = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
            if not number or not 0 < value < np.inf:
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")
        margin = self.margin
        if (
            isinstance(margin, bool)
            or not isinstance(margin, int | np.integer)
            or not 0 <= margin <= MAX_MARGIN
        ):
            raise ValueError(f"margin must be an integer from 0 to {MAX_MARGIN}, got {margin!r}")
        if self.max_train_samples is not None and self.max_train_samples < self.batch_size:
            raise ValueError(f"max_train_samples must be at least batch_size ({self.batch_size})")
        fwd, bwd = resolve(self.forward_format), resolve(self.backward_format)
        return replace(self, forward_format=fwd.name, backward_format=bwd.name)

    @property
    def label(self) -> str:
        """Short name for legends: ``float32``, ``fp8 delayed``, ``fp8 none + SR``..."""
        if self.scaling == "float32":
            return "float32"
        return f"fp8 {self.scaling}" + (" + SR" if self.stochastic_rounding else "")


@dataclass
class Fp8StepRecord:
    """One step: batch loss/accuracy, gradient underflow and saturation in fp8."""

    label: str
    step: int
    epoch: int
    loss: float
    accuracy: float
    #: fraction of nonzero output-gradient elements that became zero in e5m2
    grad_underflow_fraction: float
    #: fraction of matmul-input elements clipped to the format's max
    saturation_fraction: float
    #: scales used at this step, per tensor site
    scales: dict[str, float]
    seconds: float
    progress: float
    kind: str = "step"


@dataclass
class Fp8EpochRecord:
    """One epoch: means over its steps and held-out metrics (evaluated with the same fp8 forward)."""

    label: str
    epoch: int
    loss: float
    accuracy: float
    val_loss: float
    val_accuracy: float
    grad_underflow_fraction: float
    saturation_fraction: float
    scales: dict[str, float]
    seconds: float
    progress: float
    kind: str = "epoch"


@dataclass
class Fp8Result:
    """An fp8 (or float32) run."""

    config: Fp8Config
    epochs: list[Fp8EpochRecord] = field(default_factory=list)
    steps: list[Fp8StepRecord] = field(default_factory=list)
    #: the last step's matmul inputs: site -> (fp8 values as float32, scale, format name)
    last_matmul_inputs: dict[str, tuple[np.ndarray, float, str]] = field(default_factory=dict)
    seconds: float = 0.0
    cancelled: bool = False

    @property
    def label(self) -> str:
        """The config's legend label."""
        return self.config.label

    @property
    def final(self) -> dict[str, float]:
        """Metrics of the last finished epoch (NaN when none)."""
        if not self.epochs:
            nan = float("nan")
            return {"loss": nan, "accuracy": nan, "val_loss": nan, "val_accuracy": nan}
        e = self.epochs[-1]
        return {
            "loss": e.loss,
            "accuracy": e.accuracy,
            "val_loss": e.val_loss,
            "val_accuracy": e.val_accuracy,
        }

    def history(self) -> Any:
        """Epoch records as a pandas DataFrame (scales left out)."""
        import pandas as pd

        return pd.DataFrame([{k: v for k, v in asdict(e).items() if k != "scales"} for e in self.epochs])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "label": self.label,
            "config": asdict(self.config),
            "history": [asdict(e) for e in self.epochs],
            "final": self.final,
            "seconds": self.seconds,
            "cancelled": self.cancelled,
        }


class _Mlp:
    """60-64-64-10 ReLU MLP with float32 master weights and Adam."""

    def __init__(self, sizes: tuple[int, ...], seed: int, lr: float) -> None:
        rng = np.random.default_rng(seed)
        self.w: list[np.ndarray] = []
        self.b: list[np.ndarray] = []
        for fan_in, fan_out in itertools.pairwise(sizes):
            limit = np.sqrt(6.0 / (fan_in + fan_out))  # Glorot uniform, as Keras
            self.w.append(rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32))
            self.b.append(np.zeros(fan_out, np.float32))
        self.params = [*self.w, *self.b]
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.t = 0
        self.lr = lr

    def adam(self, grads: list[np.ndarray], eps: float, b1: float = 0.9, b2: float = 0.999) -> None:
        self.t += 1
        alpha = self.lr * np.sqrt(1 - b2**self.t) / (1 - b1**self.t)
        for p, g, m, v in zip(self.params, grads, self.m, self.v, strict=True):
            m += (g - m) * (1 - b1)
            v += (g * g - v) * (1 - b2)
            p -= (alpha * m / (np.sqrt(v) + eps)).astype(np.float32)


class _Fp8Engine:
    """Forward and backward of the MLP with fp8 matmul inputs."""

    def __init__(self, config: Fp8Config, n_layers: int) -> None:
        self.config = config
        self.fp8 = config.scaling != "float32"
        enabled = config.scaling == "delayed"
        self.scalers: dict[str, DelayedScaler] = {}
        for i in range(n_layers):
            for site, fmt in (
                ("x", config.forward_format),
                ("w", config.forward_format),
                ("dy", config.backward_format),
            ):
                self.scalers[f"layer{i}.{site}"] = DelayedScaler(
                    fmt, config.amax_history_len, config.margin, enabled
                )
        self.rng = np.random.default_rng(config.seed + 1)
        self.captured: dict[str, tuple[np.ndarray, float, str]] = {}
        self.saturated = 0
        self.quantized = 0
        self.underflow_num = 0
        self.underflow_den = 0

    def cast(
        self, key: str, values: np.ndarray, record: bool, stochastic: bool = False
    ) -> tuple[np.ndarray, float]:
        """fp8 copy of ``values`` as float32 (still scaled) and the scale used."""
        if not self.fp8:
            return values, 1.0
        scaler = self.scalers[key]
        scale = scaler.scale
        q = quantize(values, scaler.fmt.name, scale, stochastic=stochastic, rng=self.rng)
        q32 = q.astype(np.float32)
        if record:
            amax = float(np.max(np.abs(values))) if values.size else 0.0
            scaler.update(amax)
            self.saturated += int(np.sum(np.abs(values) * scale > scaler.fmt.max))
            self.quantized += values.size
            self.captured[key] = (q32, scale, scaler.fmt.name)
            if key.endswith(".dy"):
                self.underflow_num += int(np.sum((q32 == 0) & (values != 0)))
                self.underflow_den += int(np.sum(values != 0))
        return q32, scale

    def forward(self, net: _Mlp, x: np.ndarray, record: bool) -> tuple[np.ndarray, list[tuple[Any, ...]]]:
        cache = []
        h = x
        last = len(net.w) - 1
        for i, (w, b) in enumerate(zip(net.w, net.b, strict=True)):
            qx, sx = self.cast(f"layer{i}.x", h, record)
            qw, sw = self.cast(f"layer{i}.w", w, record)
            z = (qx @ qw) / np.float32(sx * sw) + b
            cache.append((qx, sx, qw, sw, z))
            h = z if i == last else np.maximum(z, 0)
        return h, cache

    def backward(self, net: _Mlp, cache: list[tuple[Any, ...]], dlogits: np.ndarray) -> list[np.ndarray]:
        dws: list[np.ndarray] = [np.empty(0)] * len(net.w)
        dbs: list[np.ndarray] = [np.empty(0)] * len(net.w)
        dz = dlogits
        for i in reversed(range(len(net.w))):
            qx, sx, qw, sw, _ = cache[i]
            qg, sg = self.cast(f"layer{i}.dy", dz, True, self.config.stochastic_rounding)
            dws[i] = (qx.T @ qg) / np.float32(sx * sg)
            dbs[i] = dz.sum(axis=0)
            if i > 0:
                dh = (qg @ qw.T) / np.float32(sg * sw)
                dz = dh * (cache[i - 1][4] > 0)
        return [*dws, *dbs]


def _softmax_xent(logits: np.ndarray, y: np.ndarray) -> tuple[float, float, np.ndarray]:
    shifted = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(shifted)
    p /= p.sum(axis=1, keepdims=True)
    n = len(y)
    loss = float(-np.mean(np.log(np.maximum(p[np.arange(n), y], 1e-30))))
    acc = float(np.mean(np.argmax(logits, axis=1) == y))
    grad = p.copy()
    grad[np.arange(n), y] -= 1
    return loss, acc, (grad / n).astype(np.float32)


def train_fp8(
    config: Fp8Config | None = None,
    *,
    callback: Callable[[Any], None] | None = None,
    cancel: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
    **overrides: Any,
) -> Fp8Result:
    """Train the digits MLP with emulated fp8 matmuls (or in float32 with ``scaling="float32"``).

    Same callback / cancel / progress protocol as ``explorer.training.train``.

    >>> r = train_fp8(scaling="delayed", epochs=1, max_train_samples=256)
    >>> r.final["loss"] < 2.5
    True
    """
    from explorer.training.data import load_digits_data

    if config is None:
        config = Fp8Config(**overrides)
    elif overrides:
        config = replace(config, **overrides)
    if not isinstance(config, Fp8Config):
        raise TypeError(f"config must be an Fp8Config, got {type(config).__name__}")
    config = config.validated()
    start = time.perf_counter()
    data = load_digits_data("mlp")
    x_train, y_train = data.x_train, data.y_train
    if config.max_train_samples is not None:
        x_train, y_train = x_train[: config.max_train_samples], y_train[: config.max_train_samples]
    net = _Mlp((x_train.shape[1], 64, 64, 10), config.seed, config.learning_rate)
    engine = _Fp8Engine(config, len(net.w))
    result = Fp8Result(config)
    rng = np.random.default_rng(config.seed)
    n = len(x_train)
    per_epoch = max(n // config.batch_size, 1)
    total = per_epoch * config.epochs
    step = 0
    for epoch in range(config.epochs):
        order = rng.permutation(n)
        epoch_steps: list[Fp8StepRecord] = []
        for b in range(per_epoch):
            if cancel is not None and cancel.is_set():
                result.cancelled = True
                break
            t0 = time.perf_counter()
            idx = order[b * config.batch_size : (b + 1) * config.batch_size]
            engine.saturated = engine.quantized = engine.underflow_num = engine.underflow_den = 0
            scales = {k: s.scale for k, s in engine.scalers.items()} if engine.fp8 else {}
            logits, cache = engine.forward(net, x_train[idx], record=True)
            loss, acc, dlogits = _softmax_xent(logits, y_train[idx])
            grads = engine.backward(net, cache, dlogits * np.float32(config.loss_multiplier))
            # Adam's epsilon follows the loss multiplier, so float32 is invariant to it
            net.adam(grads, eps=1e-7 * config.loss_multiplier)
            rec = Fp8StepRecord(
                config.label,
                step,
                epoch,
                loss,
                acc,
                engine.underflow_num / engine.underflow_den if engine.underflow_den else 0.0,
                engine.saturated / engine.quantized if engine.quantized else 0.0,
                scales,
                time.perf_counter() - t0,
                (step + 1) / total,
            )
            result.steps.append(rec)
            epoch_steps.append(rec)
            if callback is not None:
                callback(rec)
            step += 1
            if progress is not None:
                progress(step, total)
        if len(epoch_steps) < per_epoch:
            break
        val_logits, _ = engine.forward(net, data.x_val, record=False)
        val_loss, val_acc, _ = _softmax_xent(val_logits, data.y_val)
        ep = Fp8EpochRecord(
            config.label,
            epoch,
            float(np.mean([s.loss for s in epoch_steps])),
            float(np.mean([s.accuracy for s in epoch_steps])),
            val_loss,
            val_acc,
            float(np.mean([s.grad_underflow_fraction for s in epoch_steps])),
            float(np.mean([s.saturation_fraction for s in epoch_steps])),
            {k: s.scale for k, s in engine.scalers.items()} if engine.fp8 else {},
            time.perf_counter() - start,
            step / total,
        )
        result.epochs.append(ep)
        if callback is not None:
            callback(ep)
    result.last_matmul_inputs = dict(engine.captured)
    result.seconds = time.perf_counter() - start
    return result


def compare_fp8(
    variants: tuple[dict[str, Any], ...] = (
        {"scaling": "float32"},
        {"scaling": "delayed"},
        {"scaling": "none"},
        {"scaling": "delayed", "stochastic_rounding": True},
    ),
    **common: Any,
) -> list[Fp8Result]:
    """Run several fp8 variants on the same data and initial weights (``common`` fields shared)."""
    return [train_fp8(Fp8Config(**{**common, **v})) for v in variants]
