"""What PyTorch *declares* per op and dtype, from its OpInfo test database, beside what the
probes find.

PyTorch has no kernel registry that lists dtypes (a CPU kernel is a C++ ``switch`` over the
dtypes it was built for).  The nearest thing to a declaration is the OpInfo database of its own
test suite, ``torch.testing._internal.common_methods_invocations.op_db``, which ships in the
wheel: per op (and variant) the dtypes its tests run in on CPU (``dtypes``) and on CUDA
(``dtypesIfCUDA``, the CPU set when not given), and those its gradient is tested in
(``backward_dtypes``, ``backward_dtypesIfCUDA``).  It is what PyTorch's tests hold the op to,
not a registry: where it and a probe disagree, that is shown (:func:`compare`), with the reason.

Reading it has side effects: importing ``common_methods_invocations`` needs ``expecttest``,
disables cuDNN's global flags (``torch.backends.disable_global_flags()``), patches
TorchScript's call methods and may initialise CUDA.  So it is never read in this process nor in
the torch probe worker: :func:`opinfo_data` reads it in a sandbox worker of its own, started
for the read and stopped after it, and caches the plain data on disk by torch version (reading
takes 2-8 s).  Some ``dtypesIfCUDA`` are computed from the GPU of the machine that reads them
(``SM53OrLater`` ...): read on a machine without CUDA those conditions are false, and the CUDA
set may lack a dtype a GPU machine's read would list (``matmul`` in bfloat16).

Which OpInfo entries a catalog op stands for is found from its ``torch`` call: the torch
functions it calls (:func:`explorer.analysis.call_trace.trace_call`, run on stand-ins, no torch
import), by OpInfo name or alias, plus :data:`OPINFO_FOR` for calls that are methods or
operators, and for ops whose call picks a variant.  The op is declared in a dtype when every
entry it stands for declares it.

>>> from explorer.ops import get_op
>>> calls_of(get_op("euclidean_norm")), calls_of(get_op("bias_add"))
(('linalg.vector_norm',), ('add',))
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any

from explorer.ops import Op, catalog, get_op

#: version of the data :func:`read_opinfo_data` returns (a cache of another version is re-read)
DATA_VERSION = 2
#: the sample inputs per OpInfo entry run to see which aten ops it calls
TRACED_SAMPLES = 2
#: the device types OpInfo declares for, as explorer names them
DEVICES: dict[str, str] = {"CPU": "cpu", "GPU": "cuda"}
#: the formats PyTorch has a dtype for (``torch_backend.torch_dtype``), for tables
TORCH_FORMATS: tuple[str, ...] = (
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
)
#: the sandbox worker key the database is read in (a worker of its own, stopped after the read)
WORKER_KEY = "torch-opinfo"

#: catalog op -> the OpInfo entries (name, variant) it stands for, where its call does not say:
#: methods and operators (``x.to(...)``, ``a + b``), calls the stand-ins cannot trace, and calls
#: whose arguments choose a variant (``torch.div`` without rounding_mode, interpolate's mode)
OPINFO_FOR: dict[str, tuple[tuple[str, str], ...]] = {
    "div": (("div", "no_rounding_mode"),),
    "bias_add": (("add", ""),),
    "squared_difference": (("sub", ""), ("square", "")),
    "depthwise_conv2d": (("nn.functional.conv2d", ""),),
    "batch_norm": (("var_mean", ""), ("sub", ""), ("rsqrt", ""), ("mul", ""), ("add", "")),
    "resize": (("nn.functional.interpolate", "bilinear"),),
    "resize_nearest": (("nn.functional.interpolate", "nearest-exact"),),
    "rgb_to_grayscale": (("matmul", ""),),
    "cast": (("to", ""),),
    "cast_to_int32": (("to", ""),),
    "cast_from_int32": (("to", ""),),
    "saturate_cast": (("clamp", ""), ("to", "")),
}


def read_opinfo_data() -> dict[str, Any]:
    """Worker side: read ``op_db`` and return it as plain data (imports torch's test suite).

    ``entries``: one dict per OpInfo entry: ``name``, ``variant``, ``aliases``, and the dtype
    names (``"float16"``, ``"int32"`` ...) of ``cpu`` and ``cuda`` (forward) and
    ``backward_cpu`` and ``backward_cuda``; ``dynamic`` is True when the entry's dtypes were
    computed by running the op rather than written down.
    """
    start = time.perf_counter()
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    def names(dtypes: Iterable[Any]) -> list[str]:
        return sorted(str(d).removeprefix("torch.") for d in dtypes)

    entries = [
        {
            "name": info.name,
            "variant": info.variant_test_name,
            "aliases": sorted(alias.name.removeprefix("torch.") for alias in info.aliases),
            "cpu": names(info.supported_dtypes("cpu")),
            "cuda": names(info.supported_dtypes("cuda")),
            "backward_cpu": names(info.supported_backward_dtypes("cpu")),
            "backward_cuda": names(info.supported_backward_dtypes("cuda")),
            "dynamic": bool(getattr(info, "dynamic_dtypes", False)),
            "calls": _aten_calls(info),
        }
        for info in op_db
    ]
    return {
        "data_version": DATA_VERSION,
        "torch_version": str(torch.__version__),
        "cuda_available": bool(torch.cuda.is_available()),
        "entries": entries,
        "seconds": time.perf_counter() - start,
    }


def _aten_calls(info: Any) -> list[str]:
    """The aten ops (overload packet names) the first samples of OpInfo entry ``info`` call."""
    import itertools
    import warnings

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    names: dict[str, None] = {}

    class Calls(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            names.setdefault(func.overloadpacket.__name__, None)
            return func(*args, **(kwargs or {}))

    try:
        dtypes = info.supported_dtypes("cpu")
        if not dtypes:
            return []
        dtype = torch.float32 if torch.float32 in dtypes else sorted(dtypes, key=str)[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for sample in itertools.islice(
                info.sample_inputs("cpu", dtype, requires_grad=False), TRACED_SAMPLES
            ):
                with Calls():
                    info(sample.input, *sample.args, **sample.kwargs)
    except Exception:  # a sample this machine cannot run: what it called so far
        pass
    return list(names)


#: what a cache file must hold to be used
_DISK_SHAPE: dict[str, type] = {"data_version": int, "torch_version": str, "entries": list}
_DATA: dict[str, Any] | None = None


def _disk_name() -> str:
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        version = "none"
    return f"torch-opinfo-v{DATA_VERSION}-torch{version}-py{sys.version_info[0]}{sys.version_info[1]}.json"


def read_in_worker(timeout: float = 300.0) -> dict[str, Any]:
    """:func:`read_opinfo_data` in a sandbox worker of its own, which is stopped afterwards."""
    from explorer.runtime.sandbox import Sandbox

    box = Sandbox()
    try:
        data: dict[str, Any] = box.call(WORKER_KEY, read_opinfo_data, timeout=timeout)
    finally:
        box.close()
    return data


def opinfo_data(refresh: bool = False) -> dict[str, Any]:
    """The installed PyTorch's OpInfo data: from memory, the disk cache, else read in a worker
    (:func:`read_in_worker`) and cached.  Raises :class:`RuntimeError` when torch (or
    ``expecttest``, which its test suite imports) is missing."""
    global _DATA
    if _DATA is not None and not refresh:
        return _DATA
    from explorer.runtime.envcache import cache_dir_or_none, read_cache_json, write_cache_json

    directory = cache_dir_or_none()
    path = None if directory is None else directory / _disk_name()
    data = None if refresh or path is None else read_cache_json(path, expect=_DISK_SHAPE)
    if data is None or data["data_version"] != DATA_VERSION:
        try:
            data = read_in_worker()
        except ModuleNotFoundError as exc:
            raise RuntimeError(
                f"PyTorch's OpInfo database cannot be read: {exc} "
                "(it needs torch and expecttest: pip install torch expecttest)"
            ) from None
        if path is not None:
            write_cache_json(path, data)
    _DATA = data
    return data


def _leaf(call: str) -> str:
    """``torch.linalg.vector_norm`` -> ``linalg.vector_norm``."""
    return call.removeprefix("torch.")


def calls_of(op: Op) -> tuple[str, ...]:
    """The OpInfo-style names of the torch functions ``op``'s call uses (no torch import).

    >>> from explorer.ops import get_op
    >>> calls_of(get_op("fft")), calls_of(get_op("resize"))
    (('fft.fft', 'abs'), ('nn.functional.interpolate',))
    """
    if op.name in OPINFO_FOR:
        return tuple(dict.fromkeys(name for name, _ in OPINFO_FOR[op.name]))
    from explorer.analysis.call_trace import trace_call

    traced = trace_call(op.torch, "torch", "torch.float32", tuple(f"x{i}" for i in range(op.arity)))
    if traced is None:
        return ()
    return tuple(dict.fromkeys(_leaf(c) for c in traced.calls if c != "torch.tensor"))


def _index(data: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """OpInfo name and alias -> its entries (every variant)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for entry in data["entries"]:
        out.setdefault(entry["name"], []).append(entry)
    for entry in data["entries"]:
        for alias in entry["aliases"]:
            if alias not in out:
                out.setdefault(alias, []).append(entry)
    return out


def entries_for(op: str | Op, data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The OpInfo entries ``op`` stands for (empty: none found): one per function its call uses,
    the variant named in :data:`OPINFO_FOR`, else the default variant (``""``), else the first."""
    op = get_op(op)
    index = _index(data)
    wanted = dict(OPINFO_FOR.get(op.name, ()))
    found: list[dict[str, Any]] = []
    for name in calls_of(op):
        candidates = next(
            (index[n] for n in (name, f"nn.functional.{name}", f"special.{name}") if n in index), []
        )
        if not candidates:
            continue
        variant = wanted.get(name, "")
        chosen = next((e for e in candidates if e["variant"] == variant), candidates[0])
        if chosen not in found:
            found.append(chosen)
    return found


def entry_label(entry: Mapping[str, Any]) -> str:
    """``"div.no_rounding_mode"``, ``"exp"``: an entry's full name, as PyTorch's tests print it.

    >>> entry_label({"name": "div", "variant": "floor_rounding"})
    'div.floor_rounding'
    """
    return f"{entry['name']}.{entry['variant']}" if entry["variant"] else str(entry["name"])


def declared(entries: list[dict[str, Any]], fmt: str, key: str) -> bool | None:
    """Whether every entry lists ``fmt`` under ``key`` (``cpu``, ``cuda``, ``backward_cpu``,
    ``backward_cuda``); None when there is no entry.

    >>> e = [{"cpu": ["float16", "float32"]}, {"cpu": ["float32"]}]
    >>> declared(e, "float32", "cpu"), declared(e, "float16", "cpu"), declared([], "float16", "cpu")
    (True, False, None)
    """
    if not entries:
        return None
    return all(fmt in e[key] for e in entries)


def declared_rows(
    data: Mapping[str, Any] | None = None,
    ops: Iterable[str] | None = None,
    formats: Iterable[str] = TORCH_FORMATS,
) -> list[dict[str, Any]]:
    """One row per catalog op with a torch call and format: the OpInfo entries it stands for and
    whether they declare the format on CPU and CUDA, forward and backward (None: no entry)."""
    if data is None:
        data = opinfo_data()
    rows = []
    for name in ops if ops is not None else catalog():
        op = get_op(name)
        if op.torch is None:
            continue
        entries = entries_for(op, data)
        labels = ", ".join(entry_label(e) for e in entries)
        for fmt in formats:
            rows.append(
                {
                    "op": op.name,
                    "opinfo": labels,
                    "format": fmt,
                    "CPU": declared(entries, fmt, "cpu"),
                    "GPU": declared(entries, fmt, "cuda"),
                    "backward_CPU": declared(entries, fmt, "backward_cpu"),
                    "backward_GPU": declared(entries, fmt, "backward_cuda"),
                    "dynamic": any(e["dynamic"] for e in entries),
                }
            )
    return rows


def declared_status(row: Mapping[str, Any], device: str) -> str | None:
    """A row of :func:`declared_rows` as a status for ``device`` (``"CPU"``, ``"GPU"``): ``ok`` when
    OpInfo lists the format there, ``no_kernel`` when it lists it only on the other device,
    ``unsupported_dtype`` when on neither; None when no OpInfo entry stands for the op.

    >>> row = {"CPU": False, "GPU": True}
    >>> declared_status(row, "CPU"), declared_status(row, "GPU"), declared_status({"CPU": None}, "CPU")
    ('no_kernel', 'ok', None)
    """
    said = row[device]
    if said is None:
        return None
    if said:
        return "ok"
    other = row.get("GPU" if device == "CPU" else "CPU")
    return "no_kernel" if other else "unsupported_dtype"


#: probed statuses that mean the op ran (a silently wrong result ran too)
RAN: frozenset[str] = frozenset({"ok", "fallback", "wrong_result"})
#: probed statuses that mean the dtype has no kernel or is refused
REFUSED: frozenset[str] = frozenset({"no_kernel", "unsupported_dtype"})

_KERNEL = re.compile(r'"(?P<kernel>[^"\n]{1,200})" not implemented for')


def disagreement_reason(
    row: Mapping[str, Any], probed: Mapping[str, Any], device: str, data: Mapping[str, Any]
) -> str:
    """Why the declaration (``row``, from :func:`declared_rows`) and the probe record disagree."""
    fmt, labels = row["format"], row["opinfo"]
    where = "CUDA" if device == "GPU" else device
    if probed["status"] in RAN:
        if fmt.startswith("float8"):
            covered = sum(any(d.startswith("float8") for d in e["cpu"]) for e in data["entries"])
            return (
                f"{labels} does not list {fmt} on {where}, yet the call ran: OpInfo's dtype lists "
                f"leave float8 out ({covered} of {len(data['entries'])} entries list any float8 dtype)"
            )
        return (
            f"{labels} does not list {fmt} on {where}, yet the call ran: the tests' list is narrower "
            "than the kernels (a dtype the kernel gained after the entry was written, or one left out "
            "for accuracy in the tests)"
        )
    error = str(probed.get("error", "")).strip().splitlines()
    first = error[0] if error else probed["status"]
    reason = f"{labels} lists {fmt} on {where}, but the call failed ({probed['status']}: {first[:200]})"
    match = _KERNEL.search(first)
    if match:
        from explorer.analysis.error_text import torch_kernel_ops

        owners = [o for o in torch_kernel_ops(match["kernel"]) if o != row["op"]]
        if owners:
            reason += f"; the kernel that failed, {match['kernel']}, is that of {', '.join(owners)}"
    if probed.get("mode") == "compile":
        reason += "; under torch.compile, which OpInfo's dtype lists do not describe"
    return reason


def compare(
    rows: Iterable[Mapping[str, Any]],
    probed: Mapping[tuple[str, str], Mapping[str, Any]],
    device: str = "CPU",
    data: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Declared (``rows`` of :func:`declared_rows`) against probed: ``probed`` maps (op, format)
    to a record with ``status`` (and ``error``, ``mode``).  One row per pair in both, with
    ``declared`` (True/False/None), ``probed`` (the status), ``agree`` (None when either side
    cannot say: no OpInfo entry, or a probe that neither ran nor was refused) and ``reason``.

    >>> rows = [{"op": "exp", "opinfo": "exp", "format": "float16", "CPU": True}]
    >>> data = {"entries": []}
    >>> compare(rows, {("exp", "float16"): {"status": "ok"}}, data=data)[0]["agree"]
    True
    >>> out = compare(rows, {("exp", "float16"): {"status": "no_kernel", "error": "x"}}, data=data)[0]
    >>> out["agree"], out["reason"]
    (False, 'exp lists float16 on CPU, but the call failed (no_kernel: x)')
    """
    if data is None:
        data = opinfo_data()
    out = []
    for row in rows:
        record = probed.get((row["op"], row["format"]))
        if record is None:
            continue
        said = row[device]
        status = str(record["status"])
        agree: bool | None = None
        if said is not None and (status in RAN or status in REFUSED):
            agree = said == (status in RAN)
        reason = "" if agree is not False else disagreement_reason(row, record, device, data)
        if said is None:
            reason = "no OpInfo entry for the functions this call uses"
        out.append(
            {
                "op": row["op"],
                "opinfo": row["opinfo"],
                "format": row["format"],
                "device": device,
                "declared": said,
                "probed": status,
                "agree": agree,
                "reason": reason,
            }
        )
    return out
