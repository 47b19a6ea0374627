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
        "dtypes": {k: v.dtype for k, v in model.state_dict().items()},
        "forwards": {n: "forward" in vars(m) for n, m in model.named_modules()},
    }


def _same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a["state"].keys() == b["state"].keys()
    for k in a["state"]:
        assert torch.equal(a["state"][k], b["state"][k]), k
    for n, g in a["grads"].items():
        other = b["grads"][n]
        assert (g is None) == (other is None), n
        assert g is None or torch.equal(g, other), n
    for key in ("requires_grad", "training", "hooks", "ids", "dtypes", "forwards"):
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


# ------------------------------------------------------------------ declarations and kernels


class Spectrum(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)
        self.register_buffer("window", torch.hann_window(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stft(self.lin(x), n_fft=8, window=self.window, return_complex=True).abs()


def test_mkl_fft_refusing_half_is_a_missing_kernel() -> None:
    torch.manual_seed(3)
    model, x = Spectrum(), torch.randn(2, 16)
    with pytest.raises(RuntimeError, match="MKL FFT doesn't support tensors of type: Half"):
        torch.stft(x.half(), n_fft=8, window=torch.hann_window(8).half(), return_complex=True)  # the oracle
    from explorer.analysis.error_text import parse_error

    parsed = parse_error("RuntimeError: MKL FFT doesn't support tensors of type: Half")
    assert parsed is not None and (parsed.framework, parsed.dtype) == ("torch", "float16")
    check = check_model(model, x, policies=["float32", "float16"], devices=CPU)
    half = next(r for r in check.results if r.policy == "float16")
    assert half.ran is False and "MKL FFT" in half.error
    assert half.problem is not None and half.problem.kind == "missing_kernel"


def _status(entry: Any, fmt: str) -> str:
    """OpInfo's word for ``fmt`` on CUDA, as the declarations name it (the test's own rule)."""
    dtype = getattr(torch, fmt)
    if dtype in entry.supported_dtypes("cuda"):
        return "ok"
    return "no_kernel" if dtype in entry.supported_dtypes("cpu") else "unsupported_dtype"


class Distances(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        return torch.cdist(h, h)


@pytest.mark.slow
def test_traced_aten_ops_are_declared_as_op_db_says() -> None:
    require_module("expecttest")
    from torch.testing._internal.common_methods_invocations import op_db

    by_name = {(info.name, info.variant_test_name): info for info in op_db}
    torch.manual_seed(4)
    check = check_model(Distances(), torch.randn(3, 4), policies=["float32", "float16"], devices=["GPU"])
    expected = {"aten._cdist_forward": by_name[("cdist", "")], "aten.addmm": by_name[("addmm", "")]}
    for op in check.ops:
        if op.raw_op in expected:
            for policy in ("float32", "float16"):
                fmt = op.dtype[policy]
                assert op.kernel[policy]["GPU"].declared == _status(expected[op.raw_op], fmt), (
                    op.raw_op,
                    policy,
                )
    assert {op.raw_op for op in check.ops} >= set(expected)
    sentences = dict(zip(check.policies, check.summary, strict=True))
    assert _status(by_name[("cdist", "")], "float16") != "ok"  # OpInfo: cdist on CUDA in float32/float64 only
    assert "every op has a declared kernel" not in sentences["float16"]
    assert "aten._cdist_forward" in sentences["float16"]
    assert sentences["float32"].startswith("float32 on GPU, PyTorch")


@pytest.mark.slow
def test_traced_names_find_their_op_db_entries() -> None:
    require_module("expecttest")
    from torch.testing._internal.common_methods_invocations import op_db

    from explorer.runtime import model_torch

    defaults = {info.name for info in op_db if info.variant_test_name == ""}
    defaults |= {a.name.removeprefix("torch.") for info in op_db for a in info.aliases}
    fft_r2c = {
        f"fft.{n}" for n in ("fft", "rfft", "rfft2", "rfftn", "fft2", "fftn", "ihfft", "ihfft2", "ihfftn")
    }
    # the test's own reading of which functions each aten op implements
    oracle = {
        "aten._cdist_forward": {"cdist"},
        "aten._fft_r2c": fft_r2c | {"stft"},
        "aten.convolution": {f"nn.functional.conv{d}d" for d in (1, 2, 3)}
        | {f"nn.functional.conv_transpose{d}d" for d in (1, 2, 3)},
        "aten.native_layer_norm": {"native_layer_norm", "nn.functional.layer_norm"},
        "aten.addmm": {"addmm"},
        "aten._scaled_dot_product_flash_attention_for_cpu": {"nn.functional.scaled_dot_product_attention"},
        "aten.max_pool2d_with_indices": {"nn.functional.max_pool2d", "max_pool2d_with_indices_backward"},
    }
    for raw_op, names in oracle.items():
        first = next((n for n in model_torch.opinfo_candidates(raw_op) if n in defaults), None)
        assert first in names, (raw_op, first)


def test_an_undeclared_op_is_named_in_the_gpu_sentence() -> None:
    from explorer.analysis.model_summary import policy_sentence

    def op(raw_op: str, declared: str | None, movement: bool = False) -> dict[str, Any]:
        kernel = {"float16": {"GPU": {"declared": declared}}}
        return {
            "raw_op": raw_op,
            "dtype": {"float16": "float16"},
            "kernel": kernel,
            "data_movement": movement,
        }

    ops = [
        op("aten.addmm", "ok"),
        op("aten._fancy", None),
        op("aten._fancy", None),
        op("aten.view", None, True),
    ]
    text = policy_sentence("float16", "GPU", "PyTorch 2.13.0", ops, None, ran=None)
    assert "every op has a declared kernel" not in text
    assert "1 of 3 ops have a declared kernel, not declared: aten._fancy" in text
    declared_all = policy_sentence("float16", "GPU", "PyTorch 2.13.0", ops[:1] + ops[3:], None, ran=None)
    assert "every op has a declared kernel" in declared_all


class Convolutions(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 2, 3)
        self.up = torch.nn.ConvTranspose2d(2, 4, 2, groups=2)
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.up(self.conv(x)).mean(dim=(2, 3)))


def test_weight_blocks_run_along_the_contraction_axis() -> None:
    from explorer.analysis.block_view import layer_block_errors

    torch.manual_seed(5)
    model = Convolutions()
    with torch.no_grad():  # magnitudes that differ along in x kh x kw, so the layout matters
        model.conv.weight.mul_(torch.logspace(-3, 3, 36).reshape(1, 4, 3, 3))
        model.up.weight.mul_(torch.logspace(-3, 3, 8).reshape(2, 1, 2, 2))
    check = check_model(
        model, torch.randn(1, 4, 6, 6), policies=["float32"], devices=CPU, block_formats=["mxfp4"]
    )
    fmt = check.block_formats[0]

    def error(arrays: list[np.ndarray]) -> float | None:
        return layer_block_errors({"w": arrays}, [fmt])["w"][fmt]

    conv_w, conv_b = model.conv.weight.detach().numpy(), model.conv.bias.detach().numpy()
    # the oracle: one row per output channel holding all it sums over (in x kh x kw)
    rows = [np.stack([conv_w[o].ravel() for o in range(2)]), conv_b]
    assert check.weight_block_errors["conv"][fmt] == pytest.approx(error(rows))
    assert error(rows) != pytest.approx(error([conv_w, conv_b]))  # blocks along kw alone differ
    # ConvTranspose2d(2, 4, groups=2): weight (in=2, out/groups=2, 2, 2); output o of group g sums
    # over the group's one input channel x the 2x2 kernel
    up_w, up_b = model.up.weight.detach().numpy(), model.up.bias.detach().numpy()
    up_rows = np.stack([up_w[g, o_local].ravel() for g in range(2) for o_local in range(2)])
    assert check.weight_block_errors["up"][fmt] == pytest.approx(error([up_rows, up_b]))
    fc = [model.fc.weight.detach().numpy(), model.fc.bias.detach().numpy()]  # (out, in): along in
    assert check.weight_block_errors["fc"][fmt] == pytest.approx(error(fc))
    assert "contraction axis" in check.block_axis  # the axis named in the output


class LinearThenSubtractInPlace(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(1, 1)
        with torch.no_grad():
            self.lin.weight.fill_(7e4)
            self.lin.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        h -= 7e4  # h is near 0 afterwards; the Linear returned 7e4
        return h


def test_statistics_are_read_before_an_augmented_assignment() -> None:
    model, x = LinearThenSubtractInPlace(), torch.ones(1, 1)
    with torch.no_grad():
        direct = model.lin(x).abs().max().item()  # the oracle: the Linear's output, read here
    assert direct > float(np.finfo(np.float16).max)
    check = check_model(model, x, policies=["float32"], devices=CPU)
    addmm = next(op for op in check.ops if op.raw_op == "aten.addmm")
    assert addmm.max_abs == pytest.approx(direct) and addmm.verdict["float16"] == "overflows"


class Locked(torch.nn.Module):
    """A module ``copy.deepcopy`` refuses (it holds a lock), with a buffer its forward changes."""

    def __init__(self) -> None:
        super().__init__()
        import threading

        self.lock = threading.Lock()
        self.lin = torch.nn.Linear(2, 2)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.lin(x)


def test_a_module_deepcopy_refuses_is_put_back_as_it_was() -> None:
    import copy

    model, x = Locked(), torch.ones(1, 2)
    with pytest.raises(TypeError):
        copy.deepcopy(model)
    model(x).sum().backward()
    model.train()
    before = _snapshot(model)
    check = check_model(model, x, policies=["float32", "bfloat16", "autocast_bfloat16"], devices=CPU)
    assert all(r.ran for r in check.results)
    _same(before, _snapshot(model))  # the bfloat16 policy cast the module itself: cast back
