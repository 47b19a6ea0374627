"""A separate minimal reader of the shipped per-release registries (``explorer/data/registries``).

It parses the JSON files itself (gzip and json): the op's kernels for the device type, DEFAULT
included where TensorFlow uses it, and their constraint on the named data attribute; the
release tests and the history tests check explorer's answers against it.

>>> index()["releases"][0]["file"].startswith("tensorflow-")
True
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import explorer
from explorer.analysis.releases import ABSENT

DATA_DIR = Path(explorer.__file__).parent / "data" / "registries"
DEVICES = ("CPU", "GPU")
#: (raw op, its data attribute, dtype, registry device type): the cases whose history matters
CASES: list[tuple[str, str, str, str]] = [
    ("Range", "Tidx", "float16", "CPU"),
    ("FloorMod", "T", "float16", "CPU"),
    ("RGBToHSV", "T", "bfloat16", "CPU"),
    *[
        (op, "T", dtype, device)
        for op in ("Conv2D", "DepthwiseConv2dNative")
        for dtype in ("float16", "bfloat16")
        for device in DEVICES
    ],
    *[("Qr", "T", dtype, device) for dtype in ("float16", "bfloat16") for device in DEVICES],
]


def index() -> dict[str, Any]:
    """The shipped ``index.json``."""
    data: dict[str, Any] = json.loads((DATA_DIR / "index.json").read_text(encoding="utf-8"))
    return data


@cache
def raw(release: str) -> dict[str, Any]:
    """The shipped registry of ``release``, as its JSON says (read once)."""
    data: dict[str, Any] = json.loads(
        gzip.decompress((DATA_DIR / f"tensorflow-{release}.json.gz").read_bytes())
    )
    return data


def expected_status(data: dict[str, Any], op: str, attr: str, dtype: str, device: str) -> str:
    """The declared status, read straight from the JSON (the rule of the registry module's docstring)."""
    if op not in data["ops"] or dtype not in data["float_dtypes"]:
        return ABSENT
    if not any(d == device for kernels in data["kernels"].values() for d, _ in kernels):
        return ABSENT
    allowed = data["ops"][op]["attrs"][attr]["allowed"]
    if allowed is not None and dtype not in allowed:
        return "unsupported_dtype"
    serving = (device,) if device.endswith("_JIT") else (device, "DEFAULT")
    for kernel_device, constraints in data["kernels"].get(op, []):
        if kernel_device in serving and (attr not in constraints or dtype in constraints[attr]):
            return "ok"
    return "no_kernel"
