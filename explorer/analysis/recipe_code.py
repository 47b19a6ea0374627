"""A precision recipe as code to paste: which layers run in the low-precision format.

* Keras, ``float16``/``bfloat16``: a ``dtype_for(layer)`` map and a ``with_recipe(model)``
  that clones the model with each layer's ``dtype`` set from it (the recipe's layers in
  ``mixed_float16``/``mixed_bfloat16``, every other layer as it was) and copies the weights.
* Keras, ``float8_*``: a ``filters`` callable for ``model.quantize("float8", filters=...)``.
* Keras, block formats: the same callable (Keras has no MX mode; it names the layers).
* PyTorch, float8 and block formats: a torchao-style ``filter_fn(module, fqn)``, True for the
  modules the recipe quantizes (torchao's ``quantize_(model, config, filter_fn=...)`` and
  ``convert_to_float8_training(model, module_filter_fn=...)`` take such a callable).
* PyTorch, ``float16``/``bfloat16``: an autocast region plan (:func:`torch_autocast_code`):
  ``apply_recipe(model)`` makes each of the recipe's modules run its forward under
  ``torch.autocast(dtype=...)`` (its output cast back to float32) and each kept module run
  its forward under ``torch.autocast(enabled=False)`` on float32 inputs, so the kept ones
  stay float32 inside a surrounding autocast region too.  Autocast also rounds each
  region's output to the format before the cast back (the advice's runs keep the float32
  accumulator's output), so a run of the plan can differ from the measured recipe by that
  rounding.
* ONNX, ``float16`` (a PyTorch model exported with ``torch.onnx.export(..., dynamo=False)``):
  ``node_block_list_for(onnx_model)`` (:func:`onnx_float16_code`) names the exported nodes of
  the kept modules for onnxconverter-common's ``convert_float_to_float16(...,
  node_block_list=...)``.  It reads the TorchScript exporter's node names, which carry each
  module's scope (``/features/features.0/Conv`` for the module ``features.0``); for a kept
  module none of whose nodes carries its scope (another exporter) it raises, naming the op
  types to block instead (``op_block_list``, which keeps every node of those types in float32).

Layer names are written with :func:`repr`, so any name is a valid Python string literal.
"""

from __future__ import annotations

from collections.abc import Iterable

_MIXED = {"float16": "mixed_float16", "bfloat16": "mixed_bfloat16"}


def _names(names: Iterable[str]) -> str:
    items = sorted(set(names))
    if not items:
        return "set()"
    return "{" + ", ".join(repr(n) for n in items) + "}"


def keras_code(fmt: str, quantized: Iterable[str]) -> str:
    """The Keras snippet for ``fmt`` with the layers ``quantized`` in it (see the module doc).

    >>> print(keras_code("bfloat16", ["dense_2"]).splitlines()[1])
    LOW_PRECISION = {'dense_2'}
    """
    names = _names(quantized)
    if fmt in _MIXED:
        policy = _MIXED[fmt]
        return f'''import keras
LOW_PRECISION = {names}


def dtype_for(layer):
    """{policy} for the recipe's layers; every other layer keeps its dtype policy."""
    return {policy!r} if layer.name in LOW_PRECISION else layer.dtype_policy.name


def with_recipe(model):
    """A copy of a functional or Sequential model with each layer's dtype from dtype_for."""

    def clone(layer):
        config = layer.get_config()
        config["dtype"] = dtype_for(layer)
        return layer.__class__.from_config(config)

    new = keras.models.clone_model(model, clone_function=clone)
    new.set_weights(model.get_weights())
    return new


# model = with_recipe(model)  # or, writing the model: keras.layers.Dense(..., dtype=dtype_for(...))
'''
    mode = "float8" if fmt.startswith("float8") else None
    call = (
        f'model.quantize("{mode}", filters=quantize_filter)'
        if mode
        else f"Keras has no {fmt} mode: quantize_filter names the layers to put in it"
    )
    return f'''LOW_PRECISION = {names}


def quantize_filter(layer):
    """True for the layers the recipe runs in {fmt}."""
    return layer.name in LOW_PRECISION


# {call}
'''


def torch_code(fmt: str, quantized: Iterable[str]) -> str:
    """The PyTorch snippet: a torchao-style ``filter_fn(module, fqn)`` for ``fmt``.

    >>> print(torch_code("mxfp4_e2m1", ["0", "fc"]).splitlines()[0])
    LOW_PRECISION = {'0', 'fc'}
    """
    return f'''LOW_PRECISION = {_names(quantized)}


def filter_fn(module, fqn):
    """True for the modules the recipe runs in {fmt} (module: the nn.Module; fqn: its name)."""
    return fqn in LOW_PRECISION


# torchao: quantize_(model, config, filter_fn=filter_fn)
#      or: convert_to_float8_training(model, module_filter_fn=filter_fn)
'''


_TORCH_DTYPES = {"float16": "torch.float16", "bfloat16": "torch.bfloat16"}


def torch_autocast_code(fmt: str, quantized: Iterable[str], kept: Iterable[str]) -> str:
    """The PyTorch autocast region plan for ``float16``/``bfloat16``: the modules ``quantized``
    run under ``torch.autocast``, the modules ``kept`` in float32 (see the module doc).

    >>> print(torch_autocast_code("bfloat16", ["fc"], ["conv"]).splitlines()[2])
    LOW_PRECISION = {'fc'}
    """
    if fmt not in _TORCH_DTYPES:
        raise ValueError(f"an autocast plan is for float16 or bfloat16, not {fmt!r}")
    dtype = _TORCH_DTYPES[fmt]
    return f"""import torch

LOW_PRECISION = {_names(quantized)}
KEEP_FLOAT32 = {_names(kept)}


def _floats(values, dtype):
    return tuple(v.to(dtype) if torch.is_tensor(v) and v.is_floating_point() else v for v in values)


def _run_in_region(module, device_type, low_precision):
    forward = module.forward

    def region_forward(*args, **kwargs):
        if low_precision:  # {fmt} under autocast, the output back in float32
            with torch.autocast(device_type, dtype={dtype}):
                out = forward(*args, **kwargs)
            return out.float() if torch.is_tensor(out) and out.is_floating_point() else out
        with torch.autocast(device_type, enabled=False):  # float32, inputs included
            return forward(*_floats(args, torch.float32), **kwargs)

    module.forward = region_forward


def apply_recipe(model, device_type="cpu"):
    \"\"\"The recipe's modules run in {fmt} under autocast, the kept ones in float32 (also inside
    a surrounding torch.autocast region); every other module as it was.  Changes the model.\"\"\"
    for fqn, module in model.named_modules():
        if fqn in LOW_PRECISION or fqn in KEEP_FLOAT32:
            _run_in_region(module, device_type, fqn in LOW_PRECISION)
    return model


# apply_recipe(model, "cuda")  # then run the model as usual, or inside torch.autocast("cuda", ...)
"""


def onnx_float16_code(kept: Iterable[str]) -> str:
    """The ONNX float16 conversion's ``node_block_list`` for an exported PyTorch model: the
    nodes of the modules ``kept`` (see the module doc).

    >>> print(onnx_float16_code(["features.0"]).splitlines()[0])
    KEEP_FLOAT32 = {'features.0'}
    """
    return f"""KEEP_FLOAT32 = {_names(kept)}
#: the op types the covered layers export to (an op_block_list keeps every node of these in float32)
LAYER_OP_TYPES = ["Conv", "Gemm", "MatMul"]


def _scope(fqn):
    parts = fqn.split(".")
    return "/" + "/".join(".".join(parts[: i + 1]) for i in range(len(parts))) + "/"


def node_block_list_for(onnx_model):
    \"\"\"The names of the nodes the kept modules exported to, read from their scope in each
    node's name (torch.onnx.export(..., dynamo=False) names a node /features/features.0/Conv).\"\"\"
    names = []
    for fqn in sorted(KEEP_FLOAT32):
        found = [node.name for node in onnx_model.graph.node if node.name.startswith(_scope(fqn))]
        if not found:
            raise ValueError(
                f"no exported node carries the scope of {{fqn!r}}: export with dynamo=False, "
                "or block the op types instead: op_block_list=LAYER_OP_TYPES"
            )
        names.extend(found)
    return names


# import onnx
# from onnxconverter_common import float16
# torch.onnx.export(model, example_inputs, "model.onnx", dynamo=False)
# exported = onnx.load("model.onnx")
# model_fp16 = float16.convert_float_to_float16(
#     exported, keep_io_types=True, node_block_list=node_block_list_for(exported)
# )
# (every node not blocked goes to float16, not only the recipe's layers)
"""


def recipe_code(framework: str, fmt: str, quantized: Iterable[str], kept: Iterable[str] = ()) -> str:
    """The snippet for ``framework`` (``keras`` or ``torch``): for PyTorch in ``float16`` the
    autocast plan and the ONNX block list, in ``bfloat16`` the autocast plan, else the
    ``filter_fn``; ``kept``: the covered layers kept in higher precision."""
    if framework == "keras":
        return keras_code(fmt, quantized)
    if framework == "torch":
        kept = tuple(kept)
        if fmt == "float16":
            return torch_autocast_code(fmt, quantized, kept) + "\n\n" + onnx_float16_code(kept)
        if fmt == "bfloat16":
            return torch_autocast_code(fmt, quantized, kept)
        return torch_code(fmt, quantized)
    raise ValueError(f"no recipe code for framework {framework!r}")


__all__ = ["keras_code", "onnx_float16_code", "recipe_code", "torch_autocast_code", "torch_code"]
