"""A precision recipe as code to paste: which layers run in the low-precision format.

* Keras, ``float16``/``bfloat16``: a ``dtype_for(layer)`` map and a ``with_recipe(model)``
  that clones the model with each layer's ``dtype`` set from it (the recipe's layers in
  ``mixed_float16``/``mixed_bfloat16``, every other layer as it was) and copies the weights.
* Keras, ``float8_*``: a ``filters`` callable for ``model.quantize("float8", filters=...)``.
* Keras, block formats: the same callable (Keras has no MX mode; it names the layers).
* PyTorch, every format: a torchao-style ``filter_fn(module, fqn)``, True for the modules
  the recipe quantizes (torchao's ``quantize_(model, config, filter_fn=...)`` and
  ``convert_to_float8_training(model, module_filter_fn=...)`` take such a callable).

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


def recipe_code(framework: str, fmt: str, quantized: Iterable[str]) -> str:
    """The snippet for ``framework`` (``keras`` or ``torch``)."""
    if framework == "keras":
        return keras_code(fmt, quantized)
    if framework == "torch":
        return torch_code(fmt, quantized)
    raise ValueError(f"no recipe code for framework {framework!r}")


__all__ = ["keras_code", "recipe_code", "torch_code"]
