"""Issue 35, item 1 for PyTorch: the module as the user built it is the first policy; ``float32``
means everything in float32; the named policies keep the submodules the user built in a dtype of
their own.  Oracle: the same module run directly here, under ``torch.autocast`` where the policy
has it, its dtypes read off the tensors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support.require import require_module

require_module("torch")
import torch  # noqa: E402

from explorer.queries.model_check import check_model  # noqa: E402


class HalfHead(torch.nn.Module):
    """A float32 body and a head the user put in float16 (its forward casts to the head's dtype)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = torch.nn.Linear(4, 8)
        self.head = torch.nn.Linear(8, 3).to(torch.float16)

    def forward(self, x: Any) -> Any:
        return self.head(torch.relu(self.body(x)).to(self.head.weight.dtype))


def _matmul_dtypes(check: Any, policy: str) -> dict[str, str]:
    return {op.layer: op.dtype[policy] for op in check.ops if op.raw_op in ("aten.addmm", "aten.mm")}


def _direct_dtypes(model: Any, x: Any, autocast: Any = None) -> dict[str, str]:
    seen: dict[str, str] = {}
    hooks = [
        sub.register_forward_hook(lambda _m, _i, out, name=name: seen.__setitem__(name, str(out.dtype)[6:]))
        for name, sub in model.named_children()
    ]
    try:
        if autocast is None:
            model(x)
        else:
            with torch.autocast("cpu", dtype=autocast):
                model(x)
    finally:
        for h in hooks:
            h.remove()
    return seen


def test_as_built_first_float32_all_float32_and_the_users_head_kept() -> None:
    model = HalfHead()
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    check = check_model(model, (x,))
    assert check.policies[0] == "as_built"
    # as built: the run's dtypes are the ones a direct call gives
    assert _matmul_dtypes(check, "as_built") == _direct_dtypes(model, torch.tensor(x))
    assert _matmul_dtypes(check, "as_built")["head"] == "float16"
    # float32: everything in float32, the user's float16 head included
    assert set(_matmul_dtypes(check, "float32").values()) == {"float32"}
    # autocast bfloat16: the body follows autocast (as a direct run shows), the head stays float16
    direct = _direct_dtypes(model, torch.tensor(x), torch.bfloat16)
    assert direct["body"] == "bfloat16"
    assert _matmul_dtypes(check, "autocast_bfloat16") == {"body": "bfloat16", "head": "float16"}
    said = " ".join(check.summary)
    assert "`head` kept in float16 as you built it" in said
    assert "as_built (" in said and "`head` in float16" in said
    assert model.head.weight.dtype == torch.float16  # the user's module is not changed


@pytest.mark.parametrize("policy", ["float32", "autocast_float16"])
def test_a_module_without_own_dtypes_keeps_nothing(policy: str) -> None:
    from explorer.runtime import model_torch

    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
    assert model_torch.user_dtypes(model) == {}
    assert model_torch.kept_as_built(model, policy) == {}


def test_a_module_that_never_runs_gets_no_verdict_on_the_gpu() -> None:
    """Nothing traced (the forward raises) and no GPU: the GPU rows must not say "no problem
    found" (nothing was read to find one)."""

    class Broken(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            raise KeyError("boom")

    check = check_model(Broken(), (np.ones((1, 2), np.float32),))
    cpu = [s for s in check.summary if " on CPU," in s]
    gpu = [s for s in check.summary if " on GPU," in s]
    assert cpu and all("fails: KeyError" in s for s in cpu)
    assert gpu and not any("no problem found" in s for s in gpu), gpu
