"""Built-in models for workshops and tests, small enough for a 2-core laptop, each in Keras 3
and in PyTorch, with seeded weights (the same model every time it is built).

``overflow`` multiplies a hidden activation by :data:`AMPLIFY` before a LayerNorm, as T5's
feed-forward outputs grow past float16's max; ``underflow`` multiplies its output by
:data:`SHRINK`, so that the gradients reaching its layers are tiny.  What each does in each
format is for :func:`explorer.check_model` to measure, not for this module to say.

Keras and torch are imported inside the builders.

>>> sorted(BUILTINS)
['cnn', 'mlp', 'overflow', 'transformer', 'underflow']
>>> example_inputs("cnn")[0].shape
(4, 16, 16, 3)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: the factor ``overflow`` multiplies its first hidden activation by
AMPLIFY = 1e5
#: the factor ``underflow`` multiplies its output by
SHRINK = 1e-4
#: the frameworks a built-in model is built in
FRAMEWORKS: tuple[str, ...] = ("keras", "torch")


@dataclass(frozen=True)
class Builtin:
    """One built-in model."""

    #: its name (``--builtin NAME``)
    name: str
    #: what it is, in a few words
    description: str
    #: the shape of its input, batch first (Keras layout: channels last)
    input_shape: tuple[int, ...]
    #: the shape of its input in PyTorch (channels first for images)
    torch_input_shape: tuple[int, ...]


BUILTINS: dict[str, Builtin] = {
    b.name: b
    for b in (
        Builtin("mlp", "three dense layers with ReLU", (8, 16), (8, 16)),
        Builtin(
            "cnn",
            "two 3x3 convolutions, max pooling, global average pooling, a dense head",
            (4, 16, 16, 3),
            (4, 3, 16, 16),
        ),
        Builtin(
            "transformer",
            "a transformer block: 2-head self-attention (softmax), residuals, LayerNorm, a GELU feed-forward",
            (2, 8, 16),
            (2, 8, 16),
        ),
        Builtin("overflow", f"dense, ReLU, times {AMPLIFY:g}, LayerNorm, dense", (8, 16), (8, 16)),
        Builtin(
            "underflow", f"two dense layers with ReLU, a dense output times {SHRINK:g}", (8, 16), (8, 16)
        ),
    )
}


def get_builtin(name: str) -> Builtin:
    """The built-in model ``name``; ValueError lists the valid names."""
    if name not in BUILTINS:
        raise ValueError(f"unknown built-in model {name!r}; valid: {', '.join(BUILTINS)}")
    return BUILTINS[name]


def example_inputs(name: str, framework: str = "keras", seed: int = 0) -> tuple[np.ndarray, ...]:
    """A seeded standard-normal float32 sample of the model's input (its layout in ``framework``)."""
    spec = get_builtin(name)
    shape = spec.torch_input_shape if framework == "torch" else spec.input_shape
    return (np.random.default_rng(seed).standard_normal(shape).astype(np.float32),)


def build(name: str, framework: str = "keras") -> Any:
    """The built-in model ``name`` in ``framework`` (``keras`` or ``torch``), weights seeded."""
    get_builtin(name)
    if framework not in FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}; valid: {', '.join(FRAMEWORKS)}")
    builders = _KERAS if framework == "keras" else _TORCH
    return builders[name]()


# ---------------------------------------------------------------- Keras


def _keras() -> Any:
    from explorer.backends.tensorflow_backend import import_tensorflow

    import_tensorflow()
    import keras

    return keras


def _dense(keras: Any, units: int, name: str, seed: int, activation: str | None = None) -> Any:
    return keras.layers.Dense(
        units,
        activation=activation,
        name=name,
        kernel_initializer=keras.initializers.GlorotUniform(seed=seed),
    )


def _keras_mlp() -> Any:
    keras = _keras()
    x = inputs = keras.Input(BUILTINS["mlp"].input_shape[1:], name="x")
    x = _dense(keras, 32, "dense_1", 1, "relu")(x)
    x = _dense(keras, 32, "dense_2", 2, "relu")(x)
    return keras.Model(inputs, _dense(keras, 4, "logits", 3)(x), name="mlp")


def _keras_cnn() -> Any:
    keras = _keras()
    x = inputs = keras.Input(BUILTINS["cnn"].input_shape[1:], name="image")
    init = keras.initializers.GlorotUniform
    x = keras.layers.Conv2D(8, 3, activation="relu", name="conv_1", kernel_initializer=init(seed=1))(x)
    x = keras.layers.MaxPooling2D(name="pool")(x)
    x = keras.layers.Conv2D(16, 3, activation="relu", name="conv_2", kernel_initializer=init(seed=2))(x)
    x = keras.layers.GlobalAveragePooling2D(name="gap")(x)
    return keras.Model(inputs, _dense(keras, 10, "logits", 3)(x), name="cnn")


def _keras_transformer() -> Any:
    keras = _keras()
    x = inputs = keras.Input(BUILTINS["transformer"].input_shape[1:], name="tokens")
    attention = keras.layers.MultiHeadAttention(
        2, 8, name="attention", kernel_initializer=keras.initializers.GlorotUniform(seed=1)
    )
    h = keras.layers.Add(name="residual_1")([x, attention(x, x)])
    h = keras.layers.LayerNormalization(name="norm_1")(h)
    f = _dense(keras, 32, "ffn_1", 2, "gelu")(h)
    f = _dense(keras, 16, "ffn_2", 3)(f)
    h = keras.layers.Add(name="residual_2")([h, f])
    return keras.Model(inputs, keras.layers.LayerNormalization(name="norm_2")(h), name="transformer")


def _keras_overflow() -> Any:
    keras = _keras()
    x = inputs = keras.Input(BUILTINS["overflow"].input_shape[1:], name="x")
    x = _dense(keras, 32, "dense_1", 1, "relu")(x)
    x = keras.layers.Rescaling(AMPLIFY, name="amplify")(x)
    x = keras.layers.LayerNormalization(name="norm")(x)
    return keras.Model(inputs, _dense(keras, 4, "logits", 2)(x), name="overflow")


def _keras_underflow() -> Any:
    keras = _keras()
    x = inputs = keras.Input(BUILTINS["underflow"].input_shape[1:], name="x")
    x = _dense(keras, 32, "dense_1", 1, "relu")(x)
    x = _dense(keras, 32, "dense_2", 2, "relu")(x)
    x = _dense(keras, 1, "out", 3)(x)
    return keras.Model(inputs, keras.layers.Rescaling(SHRINK, name="shrink")(x), name="underflow")


_KERAS: dict[str, Callable[[], Any]] = {
    "mlp": _keras_mlp,
    "cnn": _keras_cnn,
    "transformer": _keras_transformer,
    "overflow": _keras_overflow,
    "underflow": _keras_underflow,
}


# ---------------------------------------------------------------- PyTorch


def _seeded(build_module: Callable[[Any], Any]) -> Any:
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return build_module(torch)


def _named(torch: Any, *layers: tuple[str, Any]) -> Any:
    """A Sequential whose submodules carry the Keras model's layer names."""
    from collections import OrderedDict

    return torch.nn.Sequential(OrderedDict(layers))


def _torch_mlp() -> Any:
    def make(torch: Any) -> Any:
        nn = torch.nn
        return _named(
            torch, ("dense_1", nn.Linear(16, 32)), ("relu_1", nn.ReLU()), ("dense_2", nn.Linear(32, 32)),
            ("relu_2", nn.ReLU()), ("logits", nn.Linear(32, 4)),
        )  # fmt: skip

    return _seeded(make)


def _torch_cnn() -> Any:
    def make(torch: Any) -> Any:
        nn = torch.nn
        return _named(
            torch, ("conv_1", nn.Conv2d(3, 8, 3)), ("relu_1", nn.ReLU()), ("pool", nn.MaxPool2d(2)),
            ("conv_2", nn.Conv2d(8, 16, 3)), ("relu_2", nn.ReLU()), ("gap", nn.AdaptiveAvgPool2d(1)),
            ("flatten", nn.Flatten()), ("logits", nn.Linear(16, 10)),
        )  # fmt: skip

    return _seeded(make)


def _torch_transformer() -> Any:
    def make(torch: Any) -> Any:
        nn = torch.nn

        class TransformerBlock(torch.nn.Module):
            """Self-attention, residual, LayerNorm, GELU feed-forward, residual, LayerNorm."""

            def __init__(self) -> None:
                super().__init__()
                self.attention = nn.MultiheadAttention(16, 2, batch_first=True)
                self.norm_1 = nn.LayerNorm(16)
                self.ffn_1 = nn.Linear(16, 32)
                self.act = nn.GELU()
                self.ffn_2 = nn.Linear(32, 16)
                self.norm_2 = nn.LayerNorm(16)

            def forward(self, x: Any) -> Any:
                a, _ = self.attention(x, x, x, need_weights=False)
                h = self.norm_1(x + a)
                return self.norm_2(h + self.ffn_2(self.act(self.ffn_1(h))))

        return TransformerBlock()

    return _seeded(make)


def _scale(torch: Any, factor: float) -> Any:
    class Scale(torch.nn.Module):
        """Multiplies by a constant factor."""

        def forward(self, x: Any) -> Any:
            return x * factor

    return Scale()


def _torch_overflow() -> Any:
    def make(torch: Any) -> Any:
        nn = torch.nn
        return _named(
            torch, ("dense_1", nn.Linear(16, 32)), ("relu", nn.ReLU()), ("amplify", _scale(torch, AMPLIFY)),
            ("norm", nn.LayerNorm(32)), ("logits", nn.Linear(32, 4)),
        )  # fmt: skip

    return _seeded(make)


def _torch_underflow() -> Any:
    def make(torch: Any) -> Any:
        nn = torch.nn
        return _named(
            torch, ("dense_1", nn.Linear(16, 32)), ("relu_1", nn.ReLU()), ("dense_2", nn.Linear(32, 32)),
            ("relu_2", nn.ReLU()), ("out", nn.Linear(32, 1)), ("shrink", _scale(torch, SHRINK)),
        )  # fmt: skip

    return _seeded(make)


_TORCH: dict[str, Callable[[], Any]] = {
    "mlp": _torch_mlp,
    "cnn": _torch_cnn,
    "transformer": _torch_transformer,
    "overflow": _torch_overflow,
    "underflow": _torch_underflow,
}

#: seconds the model-check workers may stay idle before they are stopped (their memory given back)
MODEL_WORKERS_IDLE_RELEASE_S = 120.0
_MODEL_SANDBOX: Any = None


def model_sandbox() -> Any:
    """The sandbox the app's checks of built-in models run in (a
    :class:`~explorer.runtime.worker_slots.SlottedSandbox`: one of the machine's worker slots while
    it runs, its workers stopped after :data:`MODEL_WORKERS_IDLE_RELEASE_S` idle), one worker per
    framework, so a crash in a framework costs the worker, not the notebook kernel."""
    global _MODEL_SANDBOX
    if _MODEL_SANDBOX is None:
        from explorer.runtime.worker_slots import SlottedSandbox

        _MODEL_SANDBOX = SlottedSandbox(MODEL_WORKERS_IDLE_RELEASE_S)
    return _MODEL_SANDBOX


#: the sandbox worker (a backend name: its framework is imported first) of each framework
WORKER_KEYS: dict[str, str] = {"keras": "tensorflow", "torch": "torch"}

__all__ = [
    "AMPLIFY",
    "BUILTINS",
    "FRAMEWORKS",
    "MODEL_WORKERS_IDLE_RELEASE_S",
    "SHRINK",
    "WORKER_KEYS",
    "Builtin",
    "build",
    "example_inputs",
    "get_builtin",
    "model_sandbox",
]
