"""A second, independent reading of TensorFlow's kernel registry, for the tests to check explorer's against.

Written from scratch from TensorFlow's Python API; it imports nothing from ``explorer``:

* the OpDefs come from ``tensorflow.python.framework.op_def_registry.get(name)`` for every
  name in ``tf.raw_ops`` and every op that has a kernel (explorer reads ``TF_GetAllOpList``);
* the kernels from ``tensorflow.python.framework.kernels.get_all_registered_kernels()``,
  after one tiny ``tf.function(jit_compile=True)`` call so that the XLA JIT kernels exist;
* dtypes stay TensorFlow ``DataType`` enum values until an answer is compared.

The rule, written down here once (it is what TensorFlow's kernel lookup does):

1. **Data attribute.**  The first type attribute (``type`` or ``list(type)``) that can hold
   a floating dtype (no allowed list, or one naming a floating dtype), looked for in this
   order: the attribute typing the first output, those typing the inputs (in order), then
   the op's other attributes (in OpDef order).  An op with no such attribute accepts the
   dtypes its arguments are fixed to.
2. **Signature.**  ``unsupported_dtype`` when the data attribute's allowed list (if any)
   leaves the dtype out.
3. **Kernels.**  Kernels with a label are skipped (only chosen when a node asks for the
   label).  A kernel serves a device type when it is registered for it, or for ``DEFAULT``
   and the device type is not an XLA JIT compilation device: TensorFlow does not fall back
   to ``DEFAULT`` kernels when compiling (a real ``jit_compile=True`` run of a DEFAULT-only
   op fails with "No registered 'X' OpKernel for XLA_CPU_JIT devices").  A kernel matches
   the dtype when it has no constraint on the data attribute or its constraint lists it;
   constraints on other attributes do not count.  ``ok`` when some served kernel matches,
   else ``no_kernel``.

``snapshot()`` reads the live TensorFlow (imports it: seconds), unless the environment
variable ``PX_REGISTRY_ORACLE_FIXTURE`` names a JSON file: then the snapshot is read from
that file (written from the live TensorFlow first when it does not exist), with no
TensorFlow import at all: the protobuf classes are rebuilt from the file descriptors
saved in it.  Mutation testing uses that (``benchmarks/mutation_registry.sh``).
"""

from __future__ import annotations

import base64
import functools
import json
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: names the live snapshot from a fixture file instead (see the module docstring)
FIXTURE_ENV = "PX_REGISTRY_ORACLE_FIXTURE"
#: XLA compilation device types: DEFAULT kernels do not serve them
JIT_DEVICE_TYPES = frozenset({"XLA_CPU_JIT", "XLA_GPU_JIT", "XLA_TPU_JIT"})
#: the device types that run computations
COMPUTE_DEVICE_TYPES = ("CPU", "GPU", "XLA_CPU_JIT", "XLA_GPU_JIT")
#: DataType names of the floating dtypes besides the FLOAT8_* / FLOAT4_* families
_PLAIN_FLOATS = ("DT_HALF", "DT_BFLOAT16", "DT_FLOAT", "DT_DOUBLE")
_FIXTURE_VERSION = 1


@dataclass
class Snapshot:
    """TensorFlow's OpDefs and kernels as protos, and what the tests need to build more of them."""

    #: a ``tensorflow.OpList``
    op_list: Any
    #: a ``tensorflow.KernelList`` (labelled kernels included)
    kernel_list: Any
    #: DataType enum value -> TensorFlow's dtype name (``19 -> "float16"``)
    dtype_names: dict[int, str]
    #: DataType enum name -> value (``"DT_HALF" -> 19``)
    enum: dict[str, int]
    tf_version: str
    #: message classes by short name: OpList, OpDef, KernelList, KernelDef
    messages: dict[str, type]
    #: what the jit_compile warm-up raised ("" when it compiled)
    xla_error: str = ""

    def dtype_name(self, value: int) -> str:
        """TensorFlow's name for a DataType enum value."""
        return self.dtype_names[value]


def _message_classes_from_tensorflow() -> dict[str, type]:
    from tensorflow.core.framework import kernel_def_pb2, op_def_pb2

    return {
        "OpList": op_def_pb2.OpList,
        "OpDef": op_def_pb2.OpDef,
        "KernelList": kernel_def_pb2.KernelList,
        "KernelDef": kernel_def_pb2.KernelDef,
    }


def _live() -> tuple[Snapshot, list[bytes]]:
    """Read the installed TensorFlow; also return the serialized proto file descriptors."""
    import tensorflow as tf
    from tensorflow.core.framework import kernel_def_pb2, op_def_pb2, types_pb2
    from tensorflow.python.framework import kernels, op_def_registry

    xla_error = ""
    try:
        with tf.device("/CPU:0"):
            tf.function(lambda x: x * 2.0, jit_compile=True, autograph=False)(tf.constant(1.0))
    except Exception as exc:  # pragma: no cover - an XLA-less build
        xla_error = f"{type(exc).__name__}: {exc}"
    kernel_list = kernels.get_all_registered_kernels()
    names = {n for n in dir(tf.raw_ops) if not n.startswith("_")} | {k.op for k in kernel_list.kernel}
    op_list = op_def_pb2.OpList()
    for name in sorted(names):
        op_def = op_def_registry.get(name)
        if op_def is not None:
            op_list.op.add().CopyFrom(op_def)
    enum = {name: value for name, value in types_pb2.DataType.items()}
    dtype_names = {}
    for value in enum.values():
        try:
            dtype_names[value] = tf.dtypes.as_dtype(value).name
        except (TypeError, ValueError):
            continue
    files: list[bytes] = []
    seen: set[str] = set()

    def add(file_descriptor: Any) -> None:
        if file_descriptor.name in seen:
            return
        seen.add(file_descriptor.name)
        for dependency in file_descriptor.dependencies:
            add(dependency)
        from google.protobuf import descriptor_pb2

        proto = descriptor_pb2.FileDescriptorProto()
        file_descriptor.CopyToProto(proto)
        files.append(proto.SerializeToString())

    add(op_def_pb2.DESCRIPTOR)
    add(kernel_def_pb2.DESCRIPTOR)
    snap = Snapshot(
        op_list,
        kernel_list,
        dtype_names,
        enum,
        str(tf.__version__),
        _message_classes_from_tensorflow(),
        xla_error,
    )
    return snap, files


def _write_fixture(path: Path, snap: Snapshot, files: list[bytes]) -> None:
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    payload = {
        "version": _FIXTURE_VERSION,
        "tf_version": snap.tf_version,
        "xla_error": snap.xla_error,
        "files": [b64(f) for f in files],
        "op_list": b64(snap.op_list.SerializeToString()),
        "kernel_list": b64(snap.kernel_list.SerializeToString()),
        "dtype_names": {str(k): v for k, v in snap.dtype_names.items()},
        "enum": snap.enum,
    }
    path.write_text(json.dumps(payload))


def _read_fixture(path: Path) -> Snapshot:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    payload = json.loads(path.read_text())
    if payload.get("version") != _FIXTURE_VERSION:
        raise ValueError(f"{path}: registry oracle fixture version {payload.get('version')!r}")
    pool = descriptor_pool.DescriptorPool()
    for blob in payload["files"]:
        pool.Add(descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(blob)))
    messages = {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"tensorflow.{name}"))
        for name in ("OpList", "OpDef", "KernelList", "KernelDef")
    }
    return Snapshot(
        messages["OpList"].FromString(base64.b64decode(payload["op_list"])),
        messages["KernelList"].FromString(base64.b64decode(payload["kernel_list"])),
        {int(k): v for k, v in payload["dtype_names"].items()},
        dict(payload["enum"]),
        payload["tf_version"],
        messages,
        payload["xla_error"],
    )


@functools.cache
def snapshot() -> Snapshot:
    """The registry snapshot: live TensorFlow, or the fixture file named by ``PX_REGISTRY_ORACLE_FIXTURE``."""
    where = os.environ.get(FIXTURE_ENV)
    if not where:
        return _live()[0]
    path = Path(where)
    if not path.exists():
        snap, files = _live()
        _write_fixture(path, snap, files)
        return snap
    return _read_fixture(path)


def is_live() -> bool:
    """True when the snapshot is read from the installed TensorFlow (no fixture file named)."""
    return not os.environ.get(FIXTURE_ENV)


class Oracle:
    """The rule of the module docstring over a :class:`Snapshot`; dtypes are DataType enum values."""

    OK = "ok"
    NO_KERNEL = "no_kernel"
    UNSUPPORTED = "unsupported_dtype"

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.op_defs = {op.name: op for op in snap.op_list.op}
        self.kernels: dict[str, list[Any]] = defaultdict(list)
        for kernel in snap.kernel_list.kernel:
            if not kernel.label:
                self.kernels[kernel.op].append(kernel)
        #: the floating DataType values TensorFlow has (non-reference)
        self.float_types = frozenset(
            value
            for name, value in snap.enum.items()
            if name in _PLAIN_FLOATS
            or (name.startswith(("DT_FLOAT8_", "DT_FLOAT4_")) and not name.endswith("_REF"))
        )
        #: every device type some kernel is registered for, DEFAULT excluded
        self.device_types = frozenset(k.device_type for k in snap.kernel_list.kernel) - {"DEFAULT"}
        self._float_by_name = {snap.dtype_names[v]: v for v in self.float_types}
        self._data_attr: dict[str, str | None] = {}

    # ---- dtype names

    def enum_of(self, name: str) -> int:
        """DataType value of a TensorFlow dtype name (``"float16" -> 19``)."""
        if name not in self._float_by_name:
            raise ValueError(f"no floating DataType called {name!r}; there are {sorted(self._float_by_name)}")
        return self._float_by_name[name]

    def name_of(self, value: int) -> str:
        return self.snap.dtype_name(value)

    @property
    def float_names(self) -> list[str]:
        """TensorFlow's names of the floating dtypes."""
        return sorted(self.name_of(v) for v in self.float_types)

    # ---- the signature

    def type_attrs(self, op: str) -> dict[str, frozenset[int] | None]:
        """Type attributes of ``op`` -> allowed DataType values (None: any)."""
        out: dict[str, frozenset[int] | None] = {}
        for attr in self.op_defs[op].attr:
            if attr.type in ("type", "list(type)"):
                out[attr.name] = frozenset(attr.allowed_values.list.type) or None
        return out

    def data_attr(self, op: str) -> str | None:
        """Rule 1: the attribute that carries the dtype, or None."""
        if op not in self._data_attr:
            self._data_attr[op] = self._find_data_attr(op)
        return self._data_attr[op]

    def _find_data_attr(self, op: str) -> str | None:
        op_def = self.op_defs[op]
        attrs = self.type_attrs(op)
        order = [arg.type_attr or arg.type_list_attr for arg in list(op_def.output_arg)[:1]]
        order += [arg.type_attr or arg.type_list_attr for arg in op_def.input_arg]
        order += [attr.name for attr in op_def.attr]
        for name in order:
            if name in attrs and (attrs[name] is None or attrs[name] & self.float_types):
                return name
        return None

    def fixed_types(self, op: str) -> frozenset[int]:
        op_def = self.op_defs[op]
        return frozenset(a.type for a in list(op_def.input_arg) + list(op_def.output_arg) if a.type)

    def allows(self, op: str, dtype: int, attr: str | None = None) -> bool:
        attr = attr or self.data_attr(op)
        if attr is None:
            return dtype in self.fixed_types(op)
        allowed = self.type_attrs(op)[attr]
        return allowed is None or dtype in allowed

    # ---- kernels

    @staticmethod
    def serves(kernel: Any, device_type: str) -> bool:
        """Rule 3: does this kernel serve ``device_type``?"""
        if kernel.device_type == device_type:
            return True
        return kernel.device_type == "DEFAULT" and device_type not in JIT_DEVICE_TYPES

    @staticmethod
    def matches(kernel: Any, attr: str | None, dtype: int) -> bool:
        for constraint in kernel.constraint:
            if constraint.name == attr and dtype not in constraint.allowed_values.list.type:
                return False
        return True

    def declared(self, op: str, dtype: int | str, device_type: str, attr: str | None = None) -> str:
        """``ok``, ``no_kernel`` or ``unsupported_dtype`` (dtype: DataType value or TF dtype name)."""
        if isinstance(dtype, str):
            dtype = self.enum_of(dtype)
        attr = attr or self.data_attr(op)
        if not self.allows(op, dtype, attr):
            return self.UNSUPPORTED
        for kernel in self.kernels.get(op, ()):
            if self.serves(kernel, device_type) and self.matches(kernel, attr, dtype):
                return self.OK
        return self.NO_KERNEL

    def kernel_device_types(self, op: str, dtype: int | str) -> set[str]:
        """Device types with an ``ok`` answer for ``op`` in ``dtype``."""
        return {d for d in self.device_types if self.declared(op, dtype, d) == self.OK}

    def has_default_kernel(self, op: str) -> bool:
        return any(k.device_type == "DEFAULT" for k in self.kernels.get(op, ()))

    def float_ops(self) -> list[str]:
        """Ops with a type attribute that can hold a floating dtype, sorted."""
        return sorted(op for op in self.op_defs if self.data_attr(op) is not None)

    @functools.cached_property
    def cells(self) -> dict[tuple[str, str, str], str]:
        """``(op, dtype name, device type) -> answer`` for every op x floating dtype x device type
        (computed once: mutation testing forks after it)."""
        return {
            (op, self.name_of(dtype), device): self.declared(op, dtype, device)
            for op in sorted(self.op_defs)
            for dtype in sorted(self.float_types)
            for device in sorted(self.device_types)
        }


@functools.cache
def oracle() -> Oracle:
    """The :class:`Oracle` over :func:`snapshot`."""
    return Oracle(snapshot())
