"""The data every training run learns: scikit-learn's bundled handwritten digits (no download).

>>> d = load_digits_data("mlp")
>>> d.x_train.shape, d.x_val.shape
((1437, 60), (360, 60))
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from explorer.training.config import MODELS


@dataclass(frozen=True)
class DigitsData:
    """The digits split 80/20 (stratified, fixed seed), standardised on the training part."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray


@cache
def load_digits_data(model: str = "mlp") -> DigitsData:
    """scikit-learn's bundled digits, ready for ``model``.

    MLP: the 60 pixels that vary in the training split, standardised.  CNN:
    all 64 pixels standardised (constant ones are 0) as 8x8x1 images.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; valid models: {', '.join(MODELS)}")
    x, y = load_digits(return_X_y=True)
    x_tr, x_va, y_tr, y_va = train_test_split(x, y, test_size=0.2, stratify=y, random_state=0)
    mean = x_tr.mean(axis=0)
    std = x_tr.std(axis=0)
    varies = std > 0
    std = np.where(varies, std, 1.0)
    x_tr = (x_tr - mean) / std
    x_va = (x_va - mean) / std
    if model == "mlp":
        x_tr, x_va = x_tr[:, varies], x_va[:, varies]
    else:
        x_tr, x_va = x_tr.reshape(-1, 8, 8, 1), x_va.reshape(-1, 8, 8, 1)
    return DigitsData(
        x_tr.astype(np.float32), y_tr.astype(np.int32), x_va.astype(np.float32), y_va.astype(np.int32)
    )
