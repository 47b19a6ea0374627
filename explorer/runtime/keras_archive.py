"""Check a ``.keras`` file before Keras builds anything from it: hostile input, read in bounded
time and memory, without TensorFlow.

A ``.keras`` file (Keras 3) is a zip archive holding ``config.json`` (the model's
architecture), ``model.weights.h5`` and optional ``assets/``.  Keras builds every layer the
config declares, allocates its weights, and writes the assets to a temporary directory.  A
17 KB file can declare a layer of billions of weights; a small compressed config can expand to
gigabytes.  :func:`check_keras_archive` refuses, each with one line (a ValueError, or the
FileNotFoundError of a missing path), before Keras is imported:

- a path that is not a regular file (a symbolic link is followed to a regular file, else said
  for what it is), an empty file, a legacy HDF5 file, anything that is not a complete zip;
- more than :data:`MAX_MEMBERS` members, more than :data:`MAX_UNCOMPRESSED_BYTES` uncompressed
  in all (the sizes the zip directory declares: a member never reads past its declared size),
  more than :data:`MAX_ASSET_BYTES` under ``assets/`` (what Keras writes to disk), member names
  that climb out of the archive (``..``, absolute);
- no ``config.json``, one over :data:`MAX_CONFIG_BYTES`, with more than :data:`MAX_CLASS_NAMES`
  ``"class_name"`` keys or nested deeper than :data:`MAX_DEPTH` (both measured on the text before
  :func:`json.loads` runs), or not a model config;
- classes that are not Keras' own (named), Lambda layers (they hold Python code);
- more than :data:`MAX_LAYERS` layers, more than :data:`MAX_PARAMETERS` parameters, or a
  declared shape (an input, a layer's input, a reshape) of more than
  :data:`MAX_SHAPE_ELEMENTS` elements per sample.

Parameters are computed from the config alone (:func:`layer_parameters`): the formula of each
common layer (Dense, convolutions, normalizations, recurrent layers, attention, embeddings),
from the layer's declared input shape; a layer this module does not know counts as the product
of its declared sizes (``units``, ``filters``, ``output_dim``...) times its input's last
dimension, and 0 when it declares none.

>>> MAX_PARAMETERS, MAX_LAYERS
(100000000, 5000)
"""

from __future__ import annotations

import json
import math
import os
import re
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any

from explorer.runtime.user_path import regular_file

#: most members in the archive
MAX_MEMBERS = 1_000
#: most bytes the members expand to, all together
MAX_UNCOMPRESSED_BYTES = 1024 * 1024 * 1024
#: most bytes under ``assets/`` (Keras writes them to a temporary directory)
MAX_ASSET_BYTES = 64 * 1024 * 1024
#: the largest ``config.json``
MAX_CONFIG_BYTES = 8 * 1024 * 1024
#: deepest nesting of lists and objects in ``config.json``
MAX_DEPTH = 100
#: most layers (nested models' layers included)
MAX_LAYERS = 5_000
#: most ``"class_name"`` keys in ``config.json`` (counted before it is parsed): a layer declares
#: itself, its dtype policy, initializers, regularizers and constraints, at most 10 in all
MAX_CLASS_NAMES = 10 * MAX_LAYERS
#: most parameters (weights), computed from the config
MAX_PARAMETERS = 100_000_000
#: most elements per sample of a declared shape (inputs, layers' inputs, reshapes)
MAX_SHAPE_ELEMENTS = 64 * 1024 * 1024

LIMITS_TEXT = (
    f"a .keras file is checked before Keras reads it: a zip of at most {MAX_MEMBERS:,} members and "
    f"{MAX_UNCOMPRESSED_BYTES // 2**20:,} MiB uncompressed ({MAX_ASSET_BYTES // 2**20} MiB of assets), "
    f"config.json at most {MAX_CONFIG_BYTES // 2**20} MiB and {MAX_DEPTH} levels deep, at most "
    f"{MAX_LAYERS:,} layers and {MAX_PARAMETERS:,} parameters (computed from the config), and no "
    f"declared shape over {MAX_SHAPE_ELEMENTS:,} elements per sample"
)

_HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
_ZIP_MAGIC = b"PK\x03\x04"
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_KEEP = bytes(range(256)).translate(None, b'"[]{}')
#: layers without weights, by class name
_NO_WEIGHTS = frozenset(
    [
        "InputLayer",
        "Reshape",
        "Flatten",
        "Activation",
        "Dropout",
        "SpatialDropout1D",
        "SpatialDropout2D",
        "SpatialDropout3D",
        "GaussianNoise",
        "GaussianDropout",
        "AlphaDropout",
        "Add",
        "Subtract",
        "Multiply",
        "Average",
        "Maximum",
        "Minimum",
        "Concatenate",
        "Dot",
        "Permute",
        "RepeatVector",
        "Cropping1D",
        "Cropping2D",
        "Cropping3D",
        "ZeroPadding1D",
        "ZeroPadding2D",
        "ZeroPadding3D",
        "UpSampling1D",
        "UpSampling2D",
        "UpSampling3D",
        "MaxPooling1D",
        "MaxPooling2D",
        "MaxPooling3D",
        "AveragePooling1D",
        "AveragePooling2D",
        "AveragePooling3D",
        "GlobalMaxPooling1D",
        "GlobalMaxPooling2D",
        "GlobalMaxPooling3D",
        "GlobalAveragePooling1D",
        "GlobalAveragePooling2D",
        "GlobalAveragePooling3D",
        "ReLU",
        "LeakyReLU",
        "ELU",
        "Softmax",
        "Masking",
        "Identity",
        "UnitNormalization",
        "ActivityRegularization",
    ]
)
#: declared sizes of a layer this module has no formula for
_SIZE_KEYS = ("units", "filters", "output_dim", "input_dim", "num_heads", "key_dim", "value_dim")
#: keys whose value is a declared shape
_SHAPE_KEYS = (
    "batch_shape",
    "input_shape",
    "target_shape",
    "shape",
    "query_shape",
    "value_shape",
    "key_shape",
)


@dataclass(frozen=True)
class ArchiveSummary:
    """What the checked archive declares."""

    members: int
    uncompressed_bytes: int
    layers: int
    parameters: int


def _refuse(name: str, why: str) -> ValueError:
    return ValueError(f"{name!r} {why}")


def json_depth(text: bytes) -> int:
    """The deepest nesting of ``[`` and ``{`` in JSON ``text`` (brackets inside strings not counted),
    without recursion.

    >>> json_depth(b'{"a": [1, {"b": "[[["}]}'), json_depth(b"3")
    (3, 0)
    """
    import numpy as np

    # escapes out, then only quotes and brackets kept; the brackets between quotes are in strings
    skeleton = _ESCAPE.sub(b"", text).translate(None, _KEEP)
    brackets = np.frombuffer(b"".join(skeleton.split(b'"')[::2]), dtype=np.uint8)
    opening = (brackets == ord("[")) | (brackets == ord("{"))
    steps = np.where(opening, 1, -1).astype(np.int64)
    return int(np.cumsum(steps).max()) if steps.size else 0


def check_keras_archive(path: str | os.PathLike[str]) -> ArchiveSummary:
    """Check the ``.keras`` file ``path`` (see the module doc); ValueError with one line if refused."""
    name = os.fspath(path)
    file = regular_file(name)
    size = file.stat().st_size
    if size == 0:
        raise _refuse(name, "is empty (0 bytes); a .keras file (a zip archive saved by Keras 3) is needed")
    with open(file, "rb") as handle:
        start = handle.read(8)
    if start.startswith(_HDF5_MAGIC):
        raise _refuse(
            name,
            "is a legacy HDF5 (.h5) Keras file; only the .keras format is read (load it in Keras and "
            "save it as .keras)",
        )
    if not start.startswith(_ZIP_MAGIC):
        raise _refuse(name, "is not a zip archive; a .keras file saved by Keras 3 is one")
    try:
        with zipfile.ZipFile(file) as archive:
            members = archive.infolist()
            summary = _check_members(name, members)
            config = _read_config(name, archive)
    except zipfile.BadZipFile as exc:
        raise _refuse(
            name, f"is not a complete zip archive (cut short or damaged: {_first_line(exc)})"
        ) from None
    except (OSError, EOFError, RuntimeError, NotImplementedError, zlib.error, ValueError) as exc:
        if isinstance(exc, ValueError) and str(exc).startswith(repr(name)):
            raise  # a refusal of this module
        raise _refuse(name, f"cannot be read as a zip archive ({_first_line(exc)})") from None
    layers, parameters = _check_config(name, config)
    return ArchiveSummary(len(members), summary, layers, parameters)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def _check_members(name: str, members: list[zipfile.ZipInfo]) -> int:
    """The total uncompressed size, after the member count, sizes and names were checked."""
    if len(members) > MAX_MEMBERS:
        raise _refuse(name, f"holds {len(members):,} archive members; at most {MAX_MEMBERS:,} are read")
    total = sum(m.file_size for m in members)
    if total > MAX_UNCOMPRESSED_BYTES:
        raise _refuse(
            name, f"expands to {total:,} bytes uncompressed; at most {MAX_UNCOMPRESSED_BYTES:,} are read"
        )
    assets = sum(m.file_size for m in members if m.filename.startswith("assets/"))
    if assets > MAX_ASSET_BYTES:
        raise _refuse(name, f"holds {assets:,} bytes of assets; at most {MAX_ASSET_BYTES:,} are read")
    for member in members:
        parts = member.filename.replace("\\", "/").split("/")
        if member.filename.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
            raise _refuse(name, f"holds a member named {member.filename[:100]!r} outside the archive")
    return total


def _read_config(name: str, archive: zipfile.ZipFile) -> Any:
    """``config.json``, size and depth checked before it is parsed."""
    try:
        info = archive.getinfo("config.json")
    except KeyError:
        raise _refuse(name, "holds no config.json; it is not a .keras model file") from None
    if info.file_size > MAX_CONFIG_BYTES:
        raise _refuse(
            name, f"has a config.json of {info.file_size:,} bytes; at most {MAX_CONFIG_BYTES:,} are read"
        )
    with archive.open(info) as member:
        text = member.read(MAX_CONFIG_BYTES + 1)
    if len(text) > MAX_CONFIG_BYTES:  # pragma: no cover - a member stops at its declared size
        raise _refuse(name, f"has a config.json over {MAX_CONFIG_BYTES:,} bytes")
    declared = text.count(b'"class_name"')
    if declared > MAX_CLASS_NAMES:
        raise _refuse(
            name,
            f"declares {declared:,} classes (layers, initializers...); a model of at most {MAX_LAYERS:,} "
            f"layers declares at most {MAX_CLASS_NAMES:,}",
        )
    depth = json_depth(text)
    if depth > MAX_DEPTH:
        raise _refuse(name, f"has a config.json nested {depth:,} levels deep; at most {MAX_DEPTH} are read")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _refuse(name, f"has a config.json that is not JSON ({_first_line(exc)})") from None


def _check_config(name: str, config: Any) -> tuple[int, int]:
    """Layers and parameters of the model config; refusals for what the module doc lists."""
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str):
        raise _refuse(name, "has a config.json that is not a Keras model's")
    custom: list[str] = []
    layers: list[dict[str, Any]] = []
    shapes: list[tuple[str, list[Any]]] = []
    stack: list[Any] = [config]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        for key in _SHAPE_KEYS:
            value = item.get(key)
            if isinstance(value, list) and all(v is None or isinstance(v, int) for v in value):
                shapes.append((key, value))
        module = item.get("module")
        class_name = item.get("class_name")
        if isinstance(class_name, str) and isinstance(item.get("config"), dict):
            if isinstance(module, str) and not (module == "keras" or module.startswith("keras.")):
                custom.append(f"{class_name} (module {module})")
            elif class_name == "Lambda":
                custom.append(f"Lambda {item['config'].get('name', '')!s}".strip())
            elif isinstance(module, str) and module.startswith(("keras.layers", "keras.src.layers")):
                layers.append(item)
            if len(layers) > MAX_LAYERS:
                raise _refuse(
                    name, f"declares more than {MAX_LAYERS:,} layers; at most {MAX_LAYERS:,} are read"
                )
        stack.extend(v for v in item.values() if isinstance(v, dict | list))
    if custom:
        listed = ", ".join(sorted(set(custom))[:5])
        more = f" and {len(set(custom)) - 5} more" if len(set(custom)) > 5 else ""
        raise _refuse(
            name,
            f"uses classes that are not Keras' own: {listed}{more}; custom objects and Lambda layers "
            "(Python code) are refused",
        )
    for key, shape in shapes:
        per_sample = shape if key == "target_shape" else shape[1:]  # the others start with the batch
        elements = math.prod(max(int(v), 1) for v in per_sample if v is not None)
        if elements > MAX_SHAPE_ELEMENTS:
            raise _refuse(
                name,
                f"declares a shape {_shape_text(shape)} of {elements:,} elements per sample; at most "
                f"{MAX_SHAPE_ELEMENTS:,} are read",
            )
    parameters = 0
    for layer in layers:
        parameters += layer_parameters(layer)
        if parameters > MAX_PARAMETERS:
            layer_name = str(layer["config"].get("name", layer["class_name"]))[:80]
            raise _refuse(
                name,
                f"declares more than {MAX_PARAMETERS:,} parameters (reached at layer {layer_name!r}, "
                f"{layer['class_name'][:80]}); at most {MAX_PARAMETERS:,} are read",
            )
    return len(layers), parameters


def _shape_text(shape: list[Any]) -> str:
    text = str(tuple(shape))
    return text if len(text) <= 80 else text[:77] + "..."


def _int(value: Any, default: int = 0) -> int:
    """A declared size: a nonnegative int, else ``default``."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _ints(value: Any) -> list[int]:
    if isinstance(value, int) and not isinstance(value, bool):
        return [max(value, 0)]
    if isinstance(value, list):
        return [_int(v) for v in value]
    return []


def _input_shape(layer: dict[str, Any]) -> list[Any]:
    """The layer's declared input shape (``build_config``), or []."""
    build = layer.get("build_config")
    if not isinstance(build, dict):
        return []
    for key in ("input_shape", "query_shape"):
        shape = build.get(key)
        if isinstance(shape, list) and shape and all(v is None or isinstance(v, int) for v in shape):
            return shape
    shapes = build.get("shapes_dict")
    if isinstance(shapes, dict):
        query = shapes.get("query_shape")
        if isinstance(query, list):
            return query
    return []


def _channels(layer: dict[str, Any], shape: list[Any]) -> int:
    """The input's channel (or feature) dimension: the last axis, or the second with channels_first."""
    config = layer["config"]
    index = 1 if config.get("data_format") == "channels_first" and len(shape) > 2 else -1
    return _int(shape[index], 1) if shape else 1


def layer_parameters(layer: dict[str, Any]) -> int:
    """Weights of one serialized Keras layer, from its config and declared input shape.

    >>> dense = {"class_name": "Dense", "config": {"units": 7, "use_bias": True},
    ...          "build_config": {"input_shape": [None, 18]}}
    >>> layer_parameters(dense)
    133
    """
    kind = str(layer.get("class_name"))
    config = layer["config"]
    shape = _input_shape(layer)
    inputs = _channels(layer, shape)
    bias = 1 if config.get("use_bias", True) else 0
    units = _int(config.get("units"))
    filters = _int(config.get("filters"))
    kernel = math.prod(_ints(config.get("kernel_size")) or [1])
    multiplier = _int(config.get("depth_multiplier"), 1)
    if kind in _NO_WEIGHTS:
        return 0
    if kind == "Dense":
        return units * inputs + units * bias
    if kind.startswith("Conv") and not kind.startswith("ConvLSTM"):
        groups = max(_int(config.get("groups"), 1), 1)
        return filters * kernel * (inputs // groups if "Transpose" not in kind else inputs) + filters * bias
    if kind.startswith("DepthwiseConv"):
        return kernel * inputs * multiplier + inputs * multiplier * bias
    if kind.startswith("SeparableConv"):
        return kernel * inputs * multiplier + inputs * multiplier * filters + filters * bias
    if kind == "Embedding":
        return _int(config.get("input_dim")) * _int(config.get("output_dim"))
    if kind == "BatchNormalization":
        return inputs * (2 + int(bool(config.get("center", True))) + int(bool(config.get("scale", True))))
    if kind in ("LayerNormalization", "GroupNormalization", "RMSNormalization"):
        return inputs * (int(bool(config.get("center", True))) + int(bool(config.get("scale", True))))
    if kind in ("LSTM", "GRU", "SimpleRNN"):
        gates = {"LSTM": 4, "GRU": 3, "SimpleRNN": 1}[kind]
        extra = gates * units if kind == "GRU" and config.get("reset_after", True) else 0
        return gates * (units * (inputs + units) + units * bias) + extra * bias
    if kind == "MultiHeadAttention":
        heads, key_dim = _int(config.get("num_heads")), _int(config.get("key_dim"))
        value_dim = _int(config.get("value_dim"), key_dim) or key_dim
        out = _ints(config.get("output_shape"))
        out_dim = math.prod(out) if out else inputs
        projections = heads * key_dim * (2 * inputs + 2 * bias) + heads * value_dim * (inputs + bias)
        return projections + heads * value_dim * out_dim + out_dim * bias
    declared = [_int(config.get(key)) for key in _SIZE_KEYS if _int(config.get(key)) > 0]
    return math.prod(declared) * max(inputs, 1) if declared else 0
