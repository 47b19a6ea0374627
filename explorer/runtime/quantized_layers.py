"""Run a model with chosen layers quantized: their weights and their input activations in a
format, the multiply and its accumulation in float32 (Keras 3 models and PyTorch modules).

**The layers covered** (:data:`COVERED`): the layers whose op is a matrix multiply over
input channels, the ops the quantized matrix-multiply recipes replace:

* Keras: ``Dense`` (kernel ``(in, out)``: blocks along axis 0), ``Conv1D``/``Conv2D``/``Conv3D``
  with ``groups == 1`` (kernel ``(*window, in, out)``: blocks along the input channels,
  axis -2); their input in blocks along its channel axis (the last one; channels_first:
  axis 1).
* PyTorch: ``nn.Linear`` (weight ``(out, in)``: blocks along axis 1), ``nn.Conv1d``/``2d``/``3d``
  with ``groups == 1`` (weight ``(out, in, *window)``: axis 1); the input along its last axis
  (Linear) or axis 1 (convolutions).

Not covered (they stay float32): depthwise and grouped convolutions (their contraction runs
over the window alone), transposed convolutions, embeddings (a lookup, no multiply),
normalisation layers, attention's internal projections in Keras (``EinsumDense``), biases
(added in the float32 accumulator), and any layer the forward pass does not call as a layer
(PyTorch's ``MultiheadAttention`` uses its ``out_proj`` through the weight alone).  A layer's
``params`` is its kernel's element count.

The model is copied once (Keras: ``clone_model`` and its weights; PyTorch: ``copy.deepcopy``
in eval mode) and the copy is what runs: the user's model is never changed.  A quantized
layer's input is converted to NumPy, quantized by
:func:`explorer.analysis.precision_advice.quantize_along` and handed back as float32, so
the copy runs eagerly (Keras) or under ``torch.no_grad`` (PyTorch).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from explorer.analysis.precision_advice import quantize_along

#: what each framework's covered layers are (the module doc says why)
COVERED: dict[str, str] = {
    "keras": "Dense, Conv1D, Conv2D, Conv3D (groups == 1)",
    "torch": "Linear, Conv1d, Conv2d, Conv3d (groups == 1)",
}


@dataclass(frozen=True)
class LayerSite:
    """One covered layer."""

    #: its name (Keras: ``layer.name``; PyTorch: the module's qualified name, ``fqn``)
    name: str
    #: its class name
    kind: str
    #: its kernel's element count
    params: int
    #: the kernel axis the blocks run along (the contraction's)
    weight_axis: int
    #: the input axis the blocks run along (the channels)
    input_axis: int


class QuantizedRunner:
    """A copy of a model that runs with any set of its covered layers quantized.

    ``layers`` lists the covered layers in the order the float32 pass first called them (a
    layer it never called is left out);
    :meth:`run` takes ``{layer name: format}`` (float32 for the layers left out) and returns
    the first output as a float32 array.  Quantized weights are computed once per layer and
    format.
    """

    framework: str
    layers: list[LayerSite]

    def __init__(self) -> None:
        self._weights: dict[tuple[str, str], Any] = {}

    def run(self, assignment: Mapping[str, str]) -> np.ndarray:  # pragma: no cover - abstract
        """The model's first output with each layer of ``assignment`` in its format."""
        raise NotImplementedError

    def _quantized_weight(self, site: LayerSite, fmt: str, weight: np.ndarray) -> np.ndarray:
        key = (site.name, fmt)
        if key not in self._weights:
            self._weights[key] = quantize_along(weight, fmt, site.weight_axis)
        return self._weights[key]

    def _check(self, assignment: Mapping[str, str]) -> None:
        names = {s.name for s in self.layers}
        unknown = sorted(set(assignment) - names)
        if unknown:
            raise ValueError(f"not a covered layer: {', '.join(unknown)}")


# ---------------------------------------------------------------- Keras


def _keras() -> Any:
    from explorer.backends.tensorflow_backend import import_tensorflow

    import_tensorflow()
    import keras

    return keras


def _keras_site(keras: Any, layer: Any) -> LayerSite | None:
    layers = keras.layers
    if isinstance(layer, layers.Dense) and getattr(layer, "kernel", None) is not None:
        if len(layer.kernel.shape) != 2:
            return None
        return LayerSite(layer.name, type(layer).__name__, int(np.prod(layer.kernel.shape)), 0, -1)
    conv_types = (layers.Conv1D, layers.Conv2D, layers.Conv3D)
    excluded = (layers.DepthwiseConv2D, layers.SeparableConv2D, layers.Conv2DTranspose)
    if isinstance(layer, conv_types) and not isinstance(layer, excluded):
        if getattr(layer, "groups", 1) != 1:
            return None
        channel_axis = 1 if getattr(layer, "data_format", "channels_last") == "channels_first" else -1
        return LayerSite(layer.name, type(layer).__name__, int(np.prod(layer.kernel.shape)), -2, channel_axis)
    return None


class KerasRunner(QuantizedRunner):
    """:class:`QuantizedRunner` for a Keras 3 model (functional or sequential)."""

    framework = "keras"

    def __init__(self, model: Any, inputs: Sequence[np.ndarray]) -> None:
        super().__init__()
        keras = _keras()
        self._keras = keras
        try:
            clone = keras.models.clone_model(model)
        except Exception as exc:  # subclassed models cannot be cloned
            raise ValueError(
                f"cannot copy the model to quantize it ({type(exc).__name__}: {exc}); "
                "give a functional or Sequential Keras model"
            ) from None
        clone.set_weights(model.get_weights())
        self._model = clone
        self._inputs = [np.asarray(x) for x in inputs]
        by_name: dict[str, Any] = {}
        for layer in clone._flatten_layers(include_self=False, recursive=True):
            site = _keras_site(keras, layer)
            if site is not None and site.name not in by_name:
                by_name[site.name] = (layer, site)
        self._by_name = by_name
        self._originals = {name: np.array(layer.kernel.numpy()) for name, (layer, _) in by_name.items()}
        self.layers = self._execution_order()

    def _execution_order(self) -> list[LayerSite]:
        order: list[str] = []

        def recorder(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                if name not in order:
                    order.append(name)
                return call(*args, **kwargs)

            return wrapped

        patched = [(layer, recorder(name, layer.call)) for name, (layer, _) in self._by_name.items()]
        self._forward(patched)
        return [self._by_name[n][1] for n in order]

    def _forward(self, patched: Sequence[tuple[Any, Callable[..., Any]]]) -> np.ndarray:
        for layer, call in patched:
            object.__setattr__(layer, "call", call)
        try:
            out = self._model(self._inputs[0] if len(self._inputs) == 1 else self._inputs, training=False)
        finally:
            for layer, _ in patched:
                object.__delattr__(layer, "call")
        first = out[0] if isinstance(out, list | tuple) else out
        if isinstance(first, dict):
            first = next(iter(first.values()))
        return np.asarray(self._keras.ops.convert_to_numpy(first), dtype=np.float32)

    def run(self, assignment: Mapping[str, str]) -> np.ndarray:
        """The model's first output with each layer of ``assignment`` in its format."""
        self._check(assignment)
        keras = self._keras
        patched = []
        for name, fmt in assignment.items():
            if fmt == "float32":
                continue
            layer, site = self._by_name[name]
            layer.kernel.assign(self._quantized_weight(site, fmt, self._originals[name]))

            def quantized_call(
                inputs: Any, *args: Any, _call: Any = layer.call, _site: LayerSite = site, _fmt: str = fmt,
                **kwargs: Any,
            ) -> Any:  # fmt: skip
                array = np.asarray(keras.ops.convert_to_numpy(inputs), dtype=np.float32)
                q = quantize_along(array, _fmt, _site.input_axis)
                return _call(keras.ops.convert_to_tensor(q), *args, **kwargs)

            patched.append((layer, quantized_call))
        try:
            return self._forward(patched)
        finally:
            for name, fmt in assignment.items():
                if fmt != "float32":
                    self._by_name[name][0].kernel.assign(self._originals[name])


# ---------------------------------------------------------------- PyTorch


def _torch_site(torch: Any, name: str, module: Any) -> LayerSite | None:
    nn = torch.nn
    if isinstance(module, nn.Linear):
        return LayerSite(name, type(module).__name__, int(module.weight.numel()), 1, -1)
    if isinstance(module, nn.Conv1d | nn.Conv2d | nn.Conv3d) and module.groups == 1:
        return LayerSite(name, type(module).__name__, int(module.weight.numel()), 1, 1)
    return None


class TorchRunner(QuantizedRunner):
    """:class:`QuantizedRunner` for a PyTorch module (its forward taking the inputs)."""

    framework = "torch"

    def __init__(self, model: Any, inputs: Sequence[np.ndarray]) -> None:
        super().__init__()
        import torch

        self._torch = torch
        self._model = copy.deepcopy(model).eval()
        self._inputs = [torch.as_tensor(np.asarray(x, dtype=np.float32)) for x in inputs]
        by_name: dict[str, Any] = {}
        for name, module in self._model.named_modules():
            site = _torch_site(torch, name, module)
            if site is not None:
                by_name[name] = (module, site)
        self._by_name = by_name
        self._originals = {n: m.weight.detach().float().numpy().copy() for n, (m, _) in by_name.items()}
        self.layers = self._execution_order()

    def _execution_order(self) -> list[LayerSite]:
        order: list[str] = []
        handles = []
        for name, (module, _) in self._by_name.items():

            def record(_module: Any, _inputs: Any, _name: str = name) -> None:
                if _name not in order:
                    order.append(_name)

            handles.append(module.register_forward_pre_hook(record))
        try:
            self._forward()
        finally:
            for handle in handles:
                handle.remove()
        return [self._by_name[n][1] for n in order]

    def _forward(self) -> np.ndarray:
        with self._torch.no_grad():
            out = self._model(*self._inputs)
        first = out[0] if isinstance(out, list | tuple) else out
        return np.asarray(first.detach().float().numpy(), dtype=np.float32)

    def run(self, assignment: Mapping[str, str]) -> np.ndarray:
        """The model's first output with each layer of ``assignment`` in its format."""
        self._check(assignment)
        torch = self._torch
        handles = []
        try:
            for name, fmt in assignment.items():
                if fmt == "float32":
                    continue
                module, site = self._by_name[name]
                weight = self._quantized_weight(site, fmt, self._originals[name])
                module.weight.data = torch.from_numpy(weight).to(module.weight.dtype)

                def hook(_module: Any, args: Any, _site: LayerSite = site, _fmt: str = fmt) -> Any:
                    x = args[0].detach().float().numpy()
                    q = torch.from_numpy(quantize_along(x, _fmt, _site.input_axis)).to(args[0].dtype)
                    return (q, *args[1:])

                handles.append(module.register_forward_pre_hook(hook))
            return self._forward()
        finally:
            for handle in handles:
                handle.remove()
            for name in assignment:
                module = self._by_name[name][0]
                module.weight.data = torch.from_numpy(self._originals[name].copy()).to(module.weight.dtype)


def runner_for(model: Any, inputs: Sequence[np.ndarray]) -> QuantizedRunner:
    """The runner of a Keras 3 model or a PyTorch module; TypeError for anything else."""
    from explorer.runtime import model_keras, model_torch

    if model_torch.is_torch_module(model):
        return TorchRunner(model, inputs)
    if model_keras.is_keras_model(model):
        return KerasRunner(model, inputs)
    raise TypeError(
        f"advise_precision takes a Keras 3 model or a PyTorch module, got {type(model).__name__} "
        "(JAX functions are not covered yet)"
    )


__all__ = ["COVERED", "KerasRunner", "LayerSite", "QuantizedRunner", "TorchRunner", "runner_for"]
