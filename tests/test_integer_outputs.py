"""Ops with integer output (argmax, argmin, casts to int32 and uint8) are compared exactly with
their reference, as every other output is compared with its own.

The oracle is a direct PyTorch run of the same cast, written here, and NumPy's ``trunc``; the
mutations (a cast that adds 7, an argmax one index off) are what the judge must catch: before
integer outputs were compared, both passed every test.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from explorer.backends import get_backend
from explorer.backends.silent import held_in
from explorer.formats import resolve
from explorer.ops import _op, get_op
from explorer.outcome import Status
from tests.support.require import INSTALL, require_module

INTEGER_OPS = ("argmax", "argmin", "cast_to_int32", "saturate_cast")


def _mutated(monkeypatch: pytest.MonkeyPatch, name: str, **calls: object) -> None:
    """Replace catalog op ``name`` by a copy whose framework calls are ``calls`` (for this test)."""
    monkeypatch.setitem(_op._CATALOG, name, dataclasses.replace(get_op(name), **calls))


def test_torch_cast_to_int32_plus_seven_is_a_wrong_result(monkeypatch):
    """The +7 mutation of torch's cast to int32 is reported; the real cast is not."""
    require_module("torch", INSTALL["torch"])
    import torch

    fmt, op = resolve("float32"), get_op("cast_to_int32")
    x = op.inputs(0)[0]
    direct = torch.from_numpy(held_in(fmt, x)).to(torch.float32).to(torch.int32).numpy()
    assert np.array_equal(direct, np.trunc(x.astype(np.float32)))  # the oracle: C's truncation
    honest = get_backend("torch").run("cast_to_int32", "float32")
    assert honest.status is Status.OK and np.array_equal(honest.result, direct)

    _mutated(monkeypatch, "cast_to_int32", torch=lambda torch, dt, x: x.to(torch.int32) + 7)
    mutated = get_backend("torch").run("cast_to_int32", "float32")
    assert mutated.status is Status.WRONG_RESULT, mutated.detail
    assert np.array_equal(mutated.result, direct + 7)
    assert f"{x.size} of {x.size} elements" in mutated.detail
    assert "differs from the exact reference" in mutated.detail


@pytest.mark.parametrize("name", INTEGER_OPS)
def test_each_integer_op_off_by_one_is_caught_in_numpy(monkeypatch, name):
    """Every integer-output op, NumPy's call shifted by one, is a wrong result; unshifted it is ok."""
    honest = get_backend("numpy").run(name, "float32")
    assert honest.status is Status.OK
    call = get_op(name).numpy
    assert call is not None
    _mutated(monkeypatch, name, numpy=lambda np, dt, *xs: call(np, dt, *xs) + 1)
    shifted = get_backend("numpy").run(name, "float32")
    assert shifted.status is Status.WRONG_RESULT, (name, shifted.detail)
    assert shifted.extra["ran_as"] == "ok"


def test_a_wrong_shape_of_integer_output_is_caught(monkeypatch):
    """argmax over the wrong axis (shape (16,) for (4,)) is wrong, not skipped."""
    _mutated(monkeypatch, "argmax", numpy=lambda np, dt, x: np.argmax(x, axis=0))
    out = get_backend("numpy").run("argmax", "float16")
    assert (
        out.status is Status.WRONG_RESULT and "shape (16,) where the reference has shape (4,)" in out.detail
    )
