"""TensorFlow's kernel registry and op signatures (OpDefs) as plain data, and the rules to query them.

TensorFlow knowledge, beside its backend: :func:`registry_data` turns KernelDefs and OpDefs
into plain data (pure), :class:`Registry` answers queries on that data (pure), and
:func:`read_registry_data` reads them from the installed TensorFlow (run it in a sandbox
worker).  Loading and caching are :func:`explorer.runtime.registry.get_registry`'s business.

What TensorFlow *declares*: for every registered op, which dtypes its signature
accepts, and for which device types a kernel is registered in each dtype.

Rules (documented because the registry leaves them to the reader):

* **Device types.**  Kernels registered for ``DEFAULT`` serve a device type that has no
  matching kernel of its own, except the *symbolic execution devices*: the XLA compilation
  backends (``XLA_CPU_JIT``, ``XLA_GPU_JIT``, ``TPU_XLA_JIT``), for which TensorFlow's
  kernel lookup (``FindKernelRegistration`` in ``core/framework/op_kernel.cc``) skips
  DEFAULT — ``tf.function(jit_compile=True)`` of an op with only a DEFAULT kernel fails
  with "No registered 'X' OpKernel for XLA_CPU_JIT devices".  See :func:`is_symbolic_device`.
  The XLA compilation device types (``XLA_CPU_JIT``, ``XLA_GPU_JIT``) only appear in
  the registry after XLA has been initialised, so :func:`read_registry_data` compiles
  one tiny function with ``jit_compile=True`` first.  Kernels with a *label* are only
  chosen when a node asks for that label, so they are ignored.
* **The data dtype attribute.**  Ops can have several type attributes (``Range``:
  ``Tidx``; ``Cast``: ``SrcT``/``DstT``; ``ArgMax``: ``T``/``Tidx``/``output_type``;
  ``RandomUniform``: ``dtype``/``T``).  The attribute that carries "the dtype" is the
  first type attribute that can hold a floating dtype, looked for in this order: the
  one typing the first output, then the ones typing the inputs in order, then any
  other.  So ``Range`` -> ``Tidx``, ``Cast`` -> ``DstT``, ``ArgMax`` -> ``T``,
  ``RandomUniform`` -> ``dtype``.  Pass ``attr=`` to ask about another one.
* **Constraints.**  A kernel matches a dtype when it has no constraint on the data
  attribute (it takes any dtype the OpDef allows) or its constraint lists the dtype;
  constraints on other attributes are not restricting (some kernel exists).
* **Status.**  ``unsupported_dtype`` when the OpDef does not allow the dtype;
  ``no_kernel`` when it does but no matching kernel is registered for the device
  type; ``ok`` otherwise.  Ops without any type attribute accept the dtypes their
  arguments are fixed to.

>>> from explorer.runtime.registry import get_registry
>>> get_registry().declared("Cholesky", "bfloat16", "CPU").value
'unsupported_dtype'
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from explorer.outcome import Status

#: device type names used by the registry for the devices a user asks for, per mode
REGISTRY_DEVICE: dict[tuple[str, str], str] = {
    ("CPU", "eager"): "CPU",
    ("GPU", "eager"): "GPU",
    ("CPU", "xla"): "XLA_CPU_JIT",
    ("GPU", "xla"): "XLA_GPU_JIT",
}
#: registry device types that run computations (the rest are TPU/legacy infrastructure)
COMPUTE_DEVICE_TYPES: tuple[str, ...] = ("CPU", "GPU", "XLA_CPU_JIT", "XLA_GPU_JIT")
#: bump when the shape of the data read from TensorFlow changes
DATA_VERSION = 1


def registry_device(device: str, mode: str) -> str:
    """The registry device type for a device and mode: ``("CPU", "xla")`` -> ``"XLA_CPU_JIT"``."""
    key = (device.upper(), mode)
    if key not in REGISTRY_DEVICE:
        raise ValueError(
            f"no registry device type for device {device!r} in mode {mode!r}; valid: "
            + ", ".join(f"{d}/{m}" for d, m in REGISTRY_DEVICE)
        )
    return REGISTRY_DEVICE[key]


def is_symbolic_device(device_type: str) -> bool:
    """Whether TensorFlow treats ``device_type`` as a symbolic execution device, for which
    DEFAULT kernels are not looked up: the XLA JIT backends, registered by
    ``XlaBackendRegistrar`` under names ending in ``_JIT``.

    >>> is_symbolic_device("XLA_CPU_JIT"), is_symbolic_device("CPU"), is_symbolic_device("XLA_CPU")
    (True, False, False)
    """
    return device_type.endswith("_JIT")


# ---------------------------------------------------------------- reading (runs where TF is imported)


def read_registry_data() -> dict[str, Any]:
    """Read the installed TensorFlow's OpDefs and kernel registry into plain, picklable data.

    Imports TensorFlow (so it is meant to run in a sandbox worker), and initialises
    XLA first so that the XLA JIT compilation kernels are registered too; the parsing
    itself is :func:`registry_data`.
    """
    from explorer.backends.tensorflow_backend import import_tensorflow, tf_dtype
    from explorer.formats import all_formats

    tf = import_tensorflow()
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.client import pywrap_tf_session as c_api
    from tensorflow.python.framework import kernels

    xla_error = ""
    try:
        with tf.device("/CPU:0"):
            tf.function(lambda x: x + 1, jit_compile=True, autograph=False)(tf.constant(1.0))
    except Exception as exc:  # an XLA-less build: no JIT kernels, said so in the data
        xla_error = f"{type(exc).__name__}: {exc}".splitlines()[0]

    buf = c_api.TF_GetAllOpList()
    try:
        op_list = op_def_pb2.OpList()
        op_list.ParseFromString(c_api.TF_GetBuffer(buf))
    finally:
        c_api.TF_DeleteBuffer(buf)

    def dtype_name(enum: int) -> str:
        try:
            return str(tf.dtypes.as_dtype(enum).name)
        except (TypeError, ValueError):
            return f"dtype{enum}"

    return registry_data(
        op_list,
        kernels.get_all_registered_kernels(),
        dtype_name,
        float_dtypes=[f.name for f in all_formats() if tf_dtype(f) is not None],
        tf_version=str(tf.__version__),
        xla_error=xla_error,
    )


def registry_data(
    op_list: Any,
    kernel_list: Any,
    dtype_name: Any,
    float_dtypes: list[str],
    tf_version: str,
    xla_error: str = "",
) -> dict[str, Any]:
    """Plain data from TensorFlow's ``OpList`` (OpDefs) and ``KernelList`` (KernelDefs) protos:
    per op, the allowed dtypes of each type attribute and its argument types; per op, the
    (device type, constraints) of each kernel without a label.  Pure: ``dtype_name`` maps a
    DataType enum to its name."""
    names: dict[int, str] = {}

    def cached_name(enum: int) -> str:
        if enum not in names:
            names[enum] = dtype_name(enum)
        return names[enum]

    ops: dict[str, Any] = {}
    for op in op_list.op:
        attrs = {}
        for a in op.attr:
            if a.type not in ("type", "list(type)"):
                continue
            allowed = (
                [cached_name(t) for t in a.allowed_values.list.type]
                if a.HasField("allowed_values") and a.allowed_values.list.type
                else None
            )
            attrs[a.name] = {"list": a.type == "list(type)", "allowed": allowed}

        def args(arg_list: Any) -> list[dict[str, Any]]:
            return [
                {
                    "name": a.name,
                    "type_attr": a.type_attr or a.type_list_attr or None,
                    "fixed": cached_name(a.type) if a.type else None,
                }
                for a in arg_list
            ]

        ops[op.name] = {"attrs": attrs, "inputs": args(op.input_arg), "outputs": args(op.output_arg)}
    kernel_table: dict[str, list[Any]] = {}
    labelled = 0
    for k in kernel_list.kernel:
        if k.label:
            labelled += 1
            continue
        constraints = {c.name: [cached_name(t) for t in c.allowed_values.list.type] for c in k.constraint}
        kernel_table.setdefault(k.op, []).append([k.device_type, constraints])
    return {
        "data_version": DATA_VERSION,
        "tf_version": tf_version,
        "ops": ops,
        "kernels": kernel_table,
        "float_dtypes": float_dtypes,
        "labelled_kernels_ignored": labelled,
        "xla_error": xla_error,
    }


# ---------------------------------------------------------------- the queryable registry


@dataclass
class OpInfo:
    """What the registry knows about one op, pre-digested for fast queries."""

    name: str
    #: the type attribute that carries the data dtype (None: the op has none)
    data_attr: str | None
    #: every type attribute -> allowed dtypes (None: any dtype)
    attrs: dict[str, list[str] | None]
    #: dtypes of arguments with a fixed type (used when the op has no type attribute)
    fixed_dtypes: frozenset[str]
    #: device type -> list of constraint dicts of its kernels (DEFAULT merged in)
    kernels: dict[str, list[dict[str, list[str]]]] = field(default_factory=dict)

    def allows(self, dtype: str, attr: str | None = None) -> bool:
        """True when the op's signature accepts ``dtype`` for ``attr`` (default: the data attr)."""
        attr = attr or self.data_attr
        if attr is None:
            return dtype in self.fixed_dtypes
        allowed = self.attrs[attr]
        return allowed is None or dtype in allowed

    def has_kernel(self, dtype: str, device_type: str, attr: str | None = None) -> bool:
        """True when a kernel for ``device_type`` (or DEFAULT) matches ``dtype``."""
        attr = attr or self.data_attr
        for constraint in self.kernels.get(device_type, ()):
            if attr is None or attr not in constraint or dtype in constraint[attr]:
                return True
        return False

    def kernel_devices(self, dtype: str, attr: str | None = None) -> list[str]:
        """Device types with a kernel matching ``dtype`` (only when the signature allows it)."""
        if not self.allows(dtype, attr):
            return []
        return [d for d in self.kernels if self.has_kernel(dtype, d, attr)]


def _choose_data_attr(op: dict[str, Any], floats: set[str]) -> str | None:
    attrs: dict[str, Any] = op["attrs"]

    def can_float(name: str) -> bool:
        allowed = attrs[name]["allowed"]
        return allowed is None or bool(floats.intersection(allowed))

    order = [a["type_attr"] for a in op["outputs"][:1]] + [a["type_attr"] for a in op["inputs"]]
    order += list(attrs)
    for name in order:
        if name and name in attrs and can_float(name):
            return name
    return None


class Registry:
    """TensorFlow's declared availability, built from :func:`read_registry_data` output.

    Every query is a dictionary lookup; the full matrix (all ops x all float dtypes
    x all device types) takes well under a second.
    """

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        #: the TensorFlow version the registry was read from
        self.tf_version: str = data["tf_version"]
        #: the floating dtypes (format names) TensorFlow has, widest first
        self.float_dtypes: tuple[str, ...] = tuple(data["float_dtypes"])
        floats = set(self.float_dtypes)
        kernel_table: dict[str, list[Any]] = data["kernels"]
        device_types = sorted({d for ks in kernel_table.values() for d, _ in ks} - {"DEFAULT"})
        #: every device type the installed TensorFlow registers kernels for (DEFAULT excluded)
        self.device_types: tuple[str, ...] = tuple(
            [d for d in COMPUTE_DEVICE_TYPES if d in device_types]
            + [d for d in device_types if d not in COMPUTE_DEVICE_TYPES]
        )
        self.ops: dict[str, OpInfo] = {}
        for name, op in data["ops"].items():
            fixed = frozenset(a["fixed"] for a in op["inputs"] + op["outputs"] if a["fixed"])
            info = OpInfo(
                name, _choose_data_attr(op, floats), {k: v["allowed"] for k, v in op["attrs"].items()}, fixed
            )
            default = [c for d, c in kernel_table.get(name, ()) if d == "DEFAULT"]
            for device, constraint in kernel_table.get(name, ()):
                if device != "DEFAULT":
                    info.kernels.setdefault(device, []).append(constraint)
            if default:
                for device in self.device_types:
                    if not is_symbolic_device(device):
                        info.kernels.setdefault(device, []).extend(default)
            self.ops[name] = info
        self._lower = {n.lower(): n for n in self.ops}

    # ------------------------------------------------------------ lookups

    @property
    def op_names(self) -> list[str]:
        """Every op with an OpDef, sorted."""
        return sorted(self.ops)

    def ops_with_kernels(self) -> list[str]:
        """Ops with at least one registered kernel."""
        return sorted(n for n, info in self.ops.items() if info.kernels)

    def op(self, name: str) -> OpInfo:
        """The :class:`OpInfo` for raw op ``name`` (case-insensitive); ValueError names close ones."""
        if not isinstance(name, str):
            raise TypeError(f"raw op name must be a string, got {type(name).__name__}")
        if name in self.ops:
            return self.ops[name]
        if name.lower() in self._lower:
            return self.ops[self._lower[name.lower()]]
        close = difflib.get_close_matches(name, list(self.ops), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ValueError(
            f"TensorFlow {self.tf_version} has no op {name!r}{hint} ({len(self.ops)} ops are registered)"
        )

    def has_op(self, name: str) -> bool:
        """True when raw op ``name`` is registered (case-insensitive)."""
        return name in self.ops or name.lower() in self._lower

    def check_dtype(self, dtype: str) -> str:
        """A format name TensorFlow knows (aliases resolved), or ValueError listing them."""
        from explorer.formats import format_name

        name = format_name(dtype)
        if name not in self.float_dtypes:
            raise ValueError(f"TensorFlow has no {name} dtype; valid: {', '.join(self.float_dtypes)}")
        return name

    def check_device_type(self, device_type: str) -> str:
        """A registry device type, or ValueError listing the valid ones."""
        if device_type not in self.device_types:
            raise ValueError(f"unknown device type {device_type!r}; valid: {', '.join(self.device_types)}")
        return device_type

    def declared(self, op: str, dtype: str, device_type: str, attr: str | None = None) -> Status:
        """``ok``, ``no_kernel`` or ``unsupported_dtype`` for raw op × dtype × registry device type."""
        info = self.op(op)
        dtype = self.check_dtype(dtype)
        self.check_device_type(device_type)
        if attr is not None and attr not in info.attrs:
            raise ValueError(
                f"{info.name} has no type attribute {attr!r}; it has: {', '.join(info.attrs) or 'none'}"
            )
        if not info.allows(dtype, attr):
            return Status.UNSUPPORTED_DTYPE
        return Status.OK if info.has_kernel(dtype, device_type, attr) else Status.NO_KERNEL

    def allowed_dtypes(self, op: str, attr: str | None = None) -> list[str] | None:
        """The dtypes the op's signature allows for its data attr (None: any); for an op with no
        type attribute that can hold a float, the dtypes its arguments are fixed to."""
        info = self.op(op)
        attr = attr or info.data_attr
        if attr is None:
            return sorted(info.fixed_dtypes)
        return info.attrs[attr]

    def kernel_devices(self, op: str, dtype: str) -> list[str]:
        """Registry device types that have a kernel for raw op × dtype, in display order."""
        info = self.op(op)
        have = set(info.kernel_devices(self.check_dtype(dtype)))
        return [d for d in self.device_types if d in have]

    def matrix(
        self,
        ops: list[str] | None = None,
        dtypes: list[str] | None = None,
        device_types: list[str] | None = None,
    ) -> Any:
        """Long DataFrame ``op, data_attr, dtype, device_type, status`` (status as str).

        Defaults: every registered op, every float dtype, every device type.
        """
        import pandas as pd

        infos = [self.op(o) for o in ops] if ops is not None else [self.ops[n] for n in self.op_names]
        dts = [self.check_dtype(d) for d in dtypes] if dtypes is not None else list(self.float_dtypes)
        devs = (
            [self.check_device_type(d) for d in device_types]
            if device_types is not None
            else list(self.device_types)
        )
        import numpy as np

        ok, nk, un = Status.OK.value, Status.NO_KERNEL.value, Status.UNSUPPORTED_DTYPE.value
        statuses: list[str] = []
        for info in infos:
            for dt in dts:
                if not info.allows(dt):
                    statuses.extend([un] * len(devs))
                else:
                    statuses.extend(ok if info.has_kernel(dt, dev) else nk for dev in devs)
        per_op = len(dts) * len(devs)
        return pd.DataFrame(
            {
                "op": np.repeat(np.array([i.name for i in infos], dtype=object), per_op),
                "data_attr": np.repeat(np.array([i.data_attr for i in infos], dtype=object), per_op),
                "dtype": np.tile(np.repeat(np.array(dts, dtype=object), len(devs)), len(infos)),
                "device_type": np.tile(np.array(devs, dtype=object), len(infos) * len(dts)),
                "status": np.array(statuses, dtype=object),
            }
        )


# ---------------------------------------------------------------- loading, cached
