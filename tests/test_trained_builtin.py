"""The trained built-in CNN: its data is the digits repeated to 16x16x3, its weights are cached
in the project's cache directory and read back, and a damaged cache file is trained over."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.require import require_module


def test_digits_are_repeated_to_the_cnns_input() -> None:
    from sklearn.datasets import load_digits

    from explorer.training import trained_builtin as tb

    x_train, y_train, x_val, y_val = tb.digits_for_cnn("keras")
    _, _, x_val_t, _ = tb.digits_for_cnn("torch")
    assert x_train.shape == (1437, 16, 16, 3) and x_val.shape == (360, 16, 16, 3)
    np.testing.assert_array_equal(x_val_t, x_val.transpose(0, 3, 1, 2))
    # each 2x2 patch of every channel is one standardised 8x8 pixel
    small = x_val[:, ::2, ::2, 0]
    for dr in (0, 1):
        for dc in (0, 1):
            for ch in range(3):
                np.testing.assert_array_equal(x_val[:, dr::2, dc::2, ch], small)
    # the labels are sklearn's, in the same 80/20 split sizes, every digit present
    _, y = load_digits(return_X_y=True)
    assert sorted(np.bincount(np.concatenate([y_train, y_val]))) == sorted(np.bincount(y))


@pytest.mark.slow
def test_weights_are_cached_and_a_damaged_file_is_trained_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_module("torch")
    import torch

    from explorer.training import trained_builtin as tb

    monkeypatch.setenv("PX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tb, "EPOCHS", 1)
    first = tb.trained_builtin("cnn", "torch")
    cache = tmp_path / "trained_builtin" / "cnn-torch-v2.npz"
    assert not first.cached and cache.is_file()
    with torch.no_grad():
        predicted = first.model(torch.from_numpy(first.x_val)).numpy().argmax(axis=1)
    assert first.val_accuracy == pytest.approx(float(np.mean(predicted == first.y_val)))
    assert first.val_accuracy > 0.2  # one epoch: above chance (0.1)
    second = tb.trained_builtin("cnn", "torch")
    assert second.cached
    for a, b in zip(first.model.state_dict().values(), second.model.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    cache.write_bytes(b"not an npz")
    third: Any = tb.trained_builtin("cnn", "torch")
    assert not third.cached and np.load(cache, allow_pickle=False).files
    with pytest.raises(ValueError, match="'cnn' only"):
        tb.trained_builtin("mlp", "torch")
