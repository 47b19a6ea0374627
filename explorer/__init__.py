"""Precision Explorer: which ops run in which low-precision dtype on which device, where
each format overflows and underflows, how accurate each backend is, and whether mixed
precision still trains.

``import explorer`` is cheap: every public name loads on first use (ml_dtypes with the
formats, TensorFlow, PyTorch and JAX only when a backend runs), so that the command line's
``--help`` and usage errors import nothing heavy.

Formats and rounding:

>>> import explorer
>>> explorer.resolve("half").max
65504.0
>>> float(explorer.round_to(1 + 2**-9, "bfloat16")[()])
1.0

The op catalog and the backends (one interface for every framework):

>>> explorer.get_op("exp").group
'unary'
>>> explorer.get_backend("numpy").run("exp", "float16").status.value
'ok'

Probes that may crash or hang run in the sandbox's worker processes:

>>> explorer.sandbox.default_sandbox().run("numpy", "exp", "float16").status.value
'ok'

Where an op overflows, and how accurate each backend is (exact over every float16 input):

>>> regions = explorer.op_regions("exp", "float16", backend="numpy")
>>> regions.thresholds["overflow"]["positive"]["min"]
11.09375
>>> explorer.accuracy("exp", "float16", backends=["emulated"]).backends[0].max_ulp
0.0
>>> explorer.inspect_value(0.1, "bfloat16").value
0.10009765625

Block-scaled formats (OCP MX, NVFP4): a tensor's last axis in blocks sharing a scale:

>>> explorer.quantize_blocks([0.1, 1.0, 3.0, 7.0], "mxfp4_e2m1").values.tolist()
[0.0, 1.0, 3.0, 6.0]
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the lazy names below, for type checkers and readers
    from explorer.analysis.bits import inspect_value
    from explorer.app import App
    from explorer.backends import get_backend
    from explorer.blocks import block_format, quantize_blocks
    from explorer.formats import Format, all_formats, all_values, decode, encode, resolve
    from explorer.ops import catalog, get_op
    from explorer.outcome import STATUSES, Outcome, Status
    from explorer.queries.accuracy import accuracy
    from explorer.queries.advise import advise_precision
    from explorer.queries.availability import availability
    from explorer.queries.model_check import check_model
    from explorer.queries.ranges import op_regions
    from explorer.rounding import round_to
    from explorer.runtime import sandbox

__version__ = "0.1.0"

#: public names loaded on first use: name -> (module, attribute or None for the module itself)
_LAZY: dict[str, tuple[str, str | None]] = {
    "Format": ("explorer.formats", "Format"),
    "all_formats": ("explorer.formats", "all_formats"),
    "all_values": ("explorer.formats", "all_values"),
    "decode": ("explorer.formats", "decode"),
    "encode": ("explorer.formats", "encode"),
    "resolve": ("explorer.formats", "resolve"),
    "STATUSES": ("explorer.outcome", "STATUSES"),
    "Outcome": ("explorer.outcome", "Outcome"),
    "Status": ("explorer.outcome", "Status"),
    "App": ("explorer.app", "App"),
    "accuracy": ("explorer.queries.accuracy", "accuracy"),
    "advise_precision": ("explorer.queries.advise", "advise_precision"),
    "availability": ("explorer.queries.availability", "availability"),
    "block_format": ("explorer.blocks", "block_format"),
    "catalog": ("explorer.ops", "catalog"),
    "check_model": ("explorer.queries.model_check", "check_model"),
    "get_backend": ("explorer.backends", "get_backend"),
    "get_op": ("explorer.ops", "get_op"),
    "inspect_value": ("explorer.analysis.bits", "inspect_value"),
    "op_regions": ("explorer.queries.ranges", "op_regions"),
    "quantize_blocks": ("explorer.blocks", "quantize_blocks"),
    "round_to": ("explorer.rounding", "round_to"),
    "sandbox": ("explorer.runtime.sandbox", None),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(
            f"module 'explorer' has no attribute {name!r}; public names: {', '.join(__all__)}"
        )
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "STATUSES",
    "App",
    "Format",
    "Outcome",
    "Status",
    "accuracy",
    "advise_precision",
    "all_formats",
    "all_values",
    "availability",
    "block_format",
    "catalog",
    "check_model",
    "decode",
    "encode",
    "get_backend",
    "get_op",
    "inspect_value",
    "op_regions",
    "quantize_blocks",
    "resolve",
    "round_to",
    "sandbox",
]
