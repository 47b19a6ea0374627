"""The PyTorch autocast plan and the ONNX float16 block list that ``advise_precision`` writes
for a recipe, pasted and run: each module of the model is checked against PyTorch's own ops
called in the dtype the recipe gives it, and each exported layer's weights are read from the
converted ONNX graph."""

from __future__ import annotations

import copy
import io
import warnings
from typing import Any

import numpy as np
import pytest

from tests.support.require import require_module


def _model() -> Any:
    """A nested CNN: module names with dots (``features.0``, ``head.2``), seeded weights."""
    import torch

    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten())
            self.head = torch.nn.Sequential(
                torch.nn.Linear(288, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10)
            )

        def forward(self, x: Any) -> Any:
            return self.head(self.features(x))

    return Net().eval()


def _inputs() -> np.ndarray:
    return np.random.default_rng(1).standard_normal((4, 3, 8, 8)).astype(np.float32)


LAYERS = ("features.0", "head.0", "head.2")


def _advice(fmt: str) -> Any:
    from explorer.queries.advise import advise_precision

    # head.0 holds 9216 of the 9752 covered weights: a 0.1 budget keeps some of the others
    advice = advise_precision(_model(), _inputs(), formats=[fmt], budget=0.1, seeds=1)
    return advice.for_format(fmt)


def _direct(module: Any, x: Any, dtype: Any) -> Any:
    """The module's op called by the test in ``dtype`` (weights, bias and input cast to it)."""
    import torch.nn.functional as F

    w, b = module.weight.to(dtype), module.bias.to(dtype)
    if isinstance(module, __import__("torch").nn.Conv2d):
        return F.conv2d(x.to(dtype), w, b)
    return F.linear(x.to(dtype), w, b)


@pytest.mark.slow  # an advise run each (a few seconds)
@pytest.mark.parametrize("fmt", ["bfloat16", "float16"])
def test_autocast_plan_runs_exactly_the_recipes_modules_in_the_format(fmt: str) -> None:
    """With the snippet's ``apply_recipe``, each quantized module's output is PyTorch's op run
    in the format (cast back to float32), each kept module's is the float32 op, also inside a
    surrounding autocast region (where, without the plan, the kept ones would run in it)."""
    require_module("torch")
    import torch

    a = _advice(fmt)
    assert a.recipe.kept and a.quantized  # both regions exercised
    namespace: dict[str, Any] = {}
    exec(a.code, namespace)  # the snippet a user pastes
    assert namespace["LOW_PRECISION"] == set(a.quantized)
    assert namespace["KEEP_FLOAT32"] == set(a.recipe.kept)
    dtype = getattr(torch, fmt)
    for outer in (False, True):
        model = namespace["apply_recipe"](copy.deepcopy(_model()), "cpu")
        seen: dict[str, tuple[Any, Any]] = {}
        for name in LAYERS:
            model.get_submodule(name).register_forward_hook(
                lambda m, args, out, name=name, seen=seen: seen.__setitem__(name, (args[0], out))
            )
        with torch.no_grad(), torch.autocast("cpu", dtype=dtype, enabled=outer):
            model(torch.from_numpy(_inputs()))
        for name in LAYERS:
            x, out = seen[name]
            module = model.get_submodule(name)
            want = _direct(module, x, dtype if name in a.quantized else torch.float32).float()
            assert out.dtype == torch.float32, name
            assert torch.equal(out, want), (name, outer)
            if name in a.recipe.kept:
                assert not torch.equal(out, _direct(module, x, dtype).float())  # the format differs


@pytest.mark.slow
def test_onnx_node_block_list_keeps_exactly_the_kept_layers_in_float32() -> None:
    """The model exported by torch.onnx (TorchScript exporter) and converted by
    onnxconverter-common with the snippet's ``node_block_list``: the kept modules' weights stay
    float32, the others become float16, and ONNX Runtime runs the result."""
    require_module("torch")
    require_module("onnx")
    require_module("onnxruntime")
    require_module("onnxconverter_common", "pip install onnxconverter-common (the test extra)")
    import onnx
    import torch
    from onnxconverter_common import float16

    a = _advice("float16")
    assert a.recipe.kept and a.quantized
    namespace: dict[str, Any] = {}
    exec(a.code, namespace)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(_model(), (torch.from_numpy(_inputs()),), buffer, dynamo=False)
    exported = onnx.load_from_string(buffer.getvalue())
    blocked = namespace["node_block_list_for"](exported)
    converted = float16.convert_float_to_float16(exported, keep_io_types=True, node_block_list=blocked)
    types = {i.name: i.data_type for i in converted.graph.initializer}
    for name in LAYERS:
        want = onnx.TensorProto.FLOAT if name in a.recipe.kept else onnx.TensorProto.FLOAT16
        assert types[f"{name}.weight"] == want, name
    import onnxruntime as ort  # required with onnx (the same extras)

    session = ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {session.get_inputs()[0].name: _inputs()})
    with torch.no_grad():
        reference = _model()(torch.from_numpy(_inputs())).numpy()
    assert np.allclose(out.astype(np.float32), reference, rtol=0.05, atol=0.05)
    with pytest.raises(ValueError, match="op_block_list=LAYER_OP_TYPES"):
        renamed = onnx.load_from_string(buffer.getvalue())
        for node in renamed.graph.node:
            node.name = f"node_{node.op_type}"
        namespace["node_block_list_for"](renamed)
