"""check_model on a user's own PyTorch module: the module and its inputs come back as they
were, every error of the forward is an answer of its policy, statistics are the op's values
at its return (a forward pass written here is the oracle), and the OpInfo declarations of the
traced aten ops are read from ``op_db`` here."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support.require import require_module

require_module("torch")

import torch  # noqa: E402

from explorer.queries.model_check import check_model  # noqa: E402

CPU = ["CPU"]


def _snapshot(model: torch.nn.Module) -> dict[str, Any]:
    """Everything of the module the check must leave as it was, copied."""
    return {
        "state": {k: v.detach().clone() for k, v in model.state_dict().items()},
        "grads": {n: None if p.grad is None else p.grad.clone() for n, p in model.named_parameters()},
        "requires_grad": {n: p.requires_grad for n, p in model.named_parameters()},
        "training": {n: m.training for n, m in model.named_modules()},
        "hooks": {
            n: (list(m._forward_hooks), list(m._forward_pre_hooks), list(m._backward_hooks))
            for n, m in model.named_modules()
        },
        "ids": {n: id(p) for n, p in model.named_parameters()},
    }


def _same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a["state"].keys() == b["state"].keys()
    for k in a["state"]:
        assert torch.equal(a["state"][k], b["state"][k]), k
    for n, g in a["grads"].items():
        other = b["grads"][n]
        assert (g is None) == (other is None), n
        assert g is None or torch.equal(g, other), n
    for key in ("requires_grad", "training", "hooks", "ids"):
        assert a[key] == b[key], key


class Counting(torch.nn.Module):
    """A Linear and a buffer counting forward calls (a forward side effect)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.lin(x)


def test_the_users_module_gradients_buffers_hooks_and_inputs_are_unchanged() -> None:
    torch.manual_seed(0)
    model = Counting()
    seen: list[int] = []
    model.lin.register_forward_hook(lambda *_: seen.append(1))
    x = torch.randn(2, 4)
    model(x).square().sum().backward()  # the user is between backward() and optimizer.step()
    assert int(model.calls) == 1 and model.lin.weight.grad is not None
    model.train()
    before, x_before = _snapshot(model), x.clone()
    check_model(model, x, policies=["float32", "autocast_bfloat16"], devices=CPU)
    _same(before, _snapshot(model))
    assert int(model.calls) == 1  # the forward's side effect ran on the check's copy only
    assert torch.equal(x, x_before) and not x.requires_grad and x.grad is None


class WritesItsInput(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x += 1  # fine when the user calls it: their tensor does not require grad
        return self.lin(x)


def test_a_forward_that_writes_into_its_input_runs_under_every_policy() -> None:
    torch.manual_seed(1)
    model = WritesItsInput()
    x = torch.full((2, 3), 2.0)
    with torch.no_grad():
        expected = model(x.clone()).abs().max().item()  # the oracle: the user's own call
    check = check_model(model, x, policies=["float32", "autocast_float16"], devices=CPU)
    assert [r.ran for r in check.results] == [True, True], [r.error for r in check.results]
    assert torch.equal(x, torch.full((2, 3), 2.0))  # the user's input is not written into
    addmm = next(op for op in check.ops if op.raw_op == "aten.addmm")
    assert addmm.max_abs == pytest.approx(expected, rel=1e-6)


class RefusesAutocast(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_autocast_enabled("cpu"):
            raise ValueError("this model refuses autocast")
        return self.lin(x)


def test_an_error_raised_only_under_autocast_is_that_policys_answer() -> None:
    model, x = RefusesAutocast(), torch.ones(2, 3)
    model(x)  # the oracle: it runs as the user calls it ...
    with pytest.raises(ValueError), torch.autocast("cpu", dtype=torch.bfloat16):
        model(x)  # ... and refuses under autocast
    check = check_model(model, x, policies=["float32", "autocast_bfloat16"], devices=CPU)
    by_policy = {r.policy: r for r in check.results}
    assert by_policy["float32"].ran is True and by_policy["float32"].problem is None
    assert by_policy["autocast_bfloat16"].ran is False
    assert "ValueError: this model refuses autocast" in by_policy["autocast_bfloat16"].error
    assert "ValueError" in by_policy["autocast_bfloat16"].sentence


class LinearThenInplaceRelu(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        with torch.no_grad():
            self.lin.weight.copy_(torch.tensor([[-1e5, 0.0], [1.0, 2.0]]))
            self.lin.bias.zero_()
        self.act = torch.nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.lin(x))


def test_statistics_are_the_ops_values_before_a_later_inplace_op() -> None:
    model, x = LinearThenInplaceRelu(), torch.tensor([[1.0, 0.5]])
    # the oracle: the same forward written here, the Linear's output kept before the ReLU
    y = torch.nn.functional.linear(x, model.lin.weight, model.lin.bias).detach().requires_grad_()
    torch.mean(torch.square(torch.relu(y))).backward()
    with torch.autocast("cpu", dtype=torch.float16):
        y16 = torch.nn.functional.linear(x, model.lin.weight, model.lin.bias)
    assert y.abs().max().item() == 1e5 and torch.isinf(y16).any()
    check = check_model(model, x, policies=["float32", "autocast_float16"], devices=CPU)
    addmm = next(op for op in check.ops if op.raw_op == "aten.addmm")
    assert addmm.max_abs == pytest.approx(y.abs().max().item())
    assert addmm.max_grad == pytest.approx(y.grad.abs().max().item())
    assert addmm.verdict["float16"] == "overflows"
    autocast = next(r for r in check.results if r.policy == "autocast_float16")
    assert autocast.problem is not None and autocast.problem.kind == "overflow"
    assert "no problem found" not in autocast.sentence


def test_a_second_check_sees_a_changed_module() -> None:
    torch.manual_seed(2)
    model, x = torch.nn.Linear(3, 2), torch.randn(4, 3)
    first = check_model(model, x, policies=["float32"], devices=CPU)
    again = check_model(model, x, policies=["float32"], devices=CPU)
    assert [op.max_abs for op in again.ops] == [op.max_abs for op in first.ops]
    with torch.no_grad():
        model.weight.mul_(1000.0)  # the user changes the module in place
        expected = model(x).abs().max().item()
    changed = check_model(model, x, policies=["float32"], devices=CPU)
    addmm = next(op for op in changed.ops if op.raw_op == "aten.addmm")
    assert addmm.max_abs == pytest.approx(expected, rel=1e-6)
    other = np.asarray(x) * 2  # other inputs, another run
    doubled = check_model(model, other, policies=["float32"], devices=CPU)
    with torch.no_grad():
        assert next(op for op in doubled.ops if op.raw_op == "aten.addmm").max_abs == pytest.approx(
            model(torch.tensor(other)).abs().max().item(), rel=1e-6
        )
