"""A trained variant of the built-in CNN, to teach with: random weights make every layer look
alike, trained ones show accuracy against format.

The data: scikit-learn's bundled handwritten digits (:func:`explorer.training.load_digits_data`,
the CNN's standardised 8x8 images, split 80/20), each pixel repeated 2x2 to the built-in CNN's
16x16 input and copied to its 3 channels.  The model: :func:`explorer.runtime.model_builtin.build`
``("cnn", framework)`` (its seeded weights), trained with Adam (learning rate 0.01, batches of
64, :data:`EPOCHS` epochs) on the training split, cross-entropy of its logits; the batches
come in one order drawn from a seeded generator (Keras: the same order every epoch; PyTorch:
a new order each epoch from that generator).

The trained weights are cached in the project's cache directory
(:func:`explorer.runtime.envcache.cache_dir`, ``trained_builtin/cnn-<framework>-v2.npz``) and
read back when their shapes match the model's; without a usable cache the model is trained
each time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: epochs of training
EPOCHS = 20
#: bumped when the recipe changes: an older cache file is not read
_VERSION = 2


@dataclass(frozen=True)
class TrainedBuiltin:
    """A trained built-in model and the digits it was not trained on."""

    model: Any
    #: the validation images in the framework's layout (Keras: N,16,16,3; PyTorch: N,3,16,16)
    x_val: np.ndarray
    #: their labels (0-9)
    y_val: np.ndarray
    #: the float32 model's accuracy on them
    val_accuracy: float
    #: whether the weights came from the cache
    cached: bool


def digits_for_cnn(framework: str = "keras") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_val, y_val): the digits as the built-in CNN's 16x16x3 input.

    >>> x_train, y_train, x_val, y_val = digits_for_cnn()
    >>> x_train.shape, x_val.shape, digits_for_cnn("torch")[2].shape
    ((1437, 16, 16, 3), (360, 16, 16, 3), (360, 3, 16, 16))
    """
    from explorer.training.data import load_digits_data

    data = load_digits_data("cnn")

    def images(x: np.ndarray) -> np.ndarray:
        big = np.repeat(np.repeat(x, 2, axis=1), 2, axis=2)  # N,16,16,1
        rgb = np.repeat(big, 3, axis=3)
        return np.ascontiguousarray(
            rgb.transpose(0, 3, 1, 2) if framework == "torch" else rgb, dtype=np.float32
        )

    return images(data.x_train), data.y_train, images(data.x_val), data.y_val


def _cache_file(framework: str) -> Path | None:
    from explorer.runtime.envcache import cache_dir_or_none

    root = cache_dir_or_none()
    return None if root is None else root / "trained_builtin" / f"cnn-{framework}-v{_VERSION}.npz"


def _read(path: Path | None, shapes: list[tuple[int, ...]]) -> list[np.ndarray] | None:
    """The cached weights, or None when missing, unreadable or of other shapes."""
    if path is None or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = [np.asarray(data[f"w{i}"], dtype=np.float32) for i in range(len(data.files))]
    except (OSError, ValueError, KeyError):
        return None
    if [a.shape for a in arrays] != shapes or not all(np.all(np.isfinite(a)) for a in arrays):
        return None
    return arrays


def _write(path: Path | None, arrays: list[np.ndarray]) -> None:
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
        named: dict[str, Any] = {f"w{i}": a for i, a in enumerate(arrays)}
        np.savez(tmp, **named)
        os.replace(tmp, path)
    except OSError:
        pass  # no cache: trained again next time


def _train_keras(model: Any, x: np.ndarray, y: np.ndarray) -> None:
    import keras

    model.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    order = np.random.default_rng(0).permutation(len(x))  # one seeded order: no global RNG touched
    model.fit(x[order], y[order], batch_size=64, epochs=EPOCHS, shuffle=False, verbose=0)


def _train_torch(model: Any, x: np.ndarray, y: np.ndarray) -> None:
    import torch

    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))
    order = np.random.default_rng(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # ops this small: threads cost more than they give
    try:
        model.train()
        for _ in range(EPOCHS):
            perm = torch.from_numpy(order.permutation(len(xs)))
            for start in range(0, len(xs), 64):
                batch = perm[start : start + 64]
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(xs[batch]), ys[batch])
                loss.backward()
                optimizer.step()
    finally:
        torch.set_num_threads(threads)
        model.eval()


def _predict(model: Any, x: np.ndarray, framework: str) -> np.ndarray:
    if framework == "torch":
        import torch

        with torch.no_grad():
            return np.asarray(model(torch.from_numpy(x)).numpy())
    return np.asarray(model(x, training=False))


def trained_builtin(name: str = "cnn", framework: str = "keras") -> TrainedBuiltin:
    """The built-in ``name`` (only ``cnn``) trained on the digits, from the cache when there."""
    from explorer.runtime import model_builtin

    if name != "cnn":
        raise ValueError(f"a trained variant exists for the built-in 'cnn' only, not {name!r}")
    model = model_builtin.build("cnn", framework)
    x_train, y_train, x_val, y_val = digits_for_cnn(framework)
    path = _cache_file(framework)
    if framework == "torch":
        keys = list(model.state_dict())
        shapes = [tuple(v.shape) for v in model.state_dict().values()]
    else:
        shapes = [tuple(w.shape) for w in model.get_weights()]
    cached = _read(path, shapes)
    if cached is not None:
        if framework == "torch":
            import torch

            model.load_state_dict({k: torch.from_numpy(a) for k, a in zip(keys, cached, strict=True)})
        else:
            model.set_weights(cached)
    else:
        (_train_torch if framework == "torch" else _train_keras)(model, x_train, y_train)
        if framework == "torch":
            arrays = [v.detach().numpy().copy() for v in model.state_dict().values()]
        else:
            arrays = [np.asarray(w) for w in model.get_weights()]
        _write(path, arrays)
    if framework == "torch":
        model.eval()
    predictions = _predict(model, x_val, framework)
    accuracy = float(np.mean(np.argmax(predictions, axis=-1) == y_val))
    return TrainedBuiltin(model, x_val, y_val, accuracy, cached is not None)


__all__ = ["EPOCHS", "TrainedBuiltin", "digits_for_cnn", "trained_builtin"]
