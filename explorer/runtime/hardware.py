"""Reading what this machine has: the CPU's flag list (``/proc/cpuinfo``), what PyTorch and
oneDNN report about the path they take (``torch.backends.cpu.get_cpu_capability()``, oneDNN's
``ONEDNN_VERBOSE`` lines while PyTorch runs a few matmuls), and the NVIDIA GPUs (``nvidia-smi``,
``torch.cuda.get_device_capability()``).  The libraries run in a child process (a fresh
interpreter with ``ONEDNN_VERBOSE=1``), with a time limit; what cannot be read is reported as
such, never guessed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

#: the child's last line starts with this, then JSON
_MARK = "PX_HARDWARE "
#: the child: PyTorch's CPU capability, CUDA devices, and matmuls / a convolution on the CPU in
#: float32, bfloat16 and float16 (oneDNN prints a line per primitive it runs)
_PROBE = r"""
import json, sys
out = {}
try:
    import torch
except Exception as exc:
    out["torch_error"] = f"{type(exc).__name__}: {exc}"
else:
    out["torch_version"] = torch.__version__
    out["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    out["cuda_devices"] = [
        {"name": torch.cuda.get_device_name(i), "capability": list(torch.cuda.get_device_capability(i))}
        for i in range(torch.cuda.device_count())
    ] if torch.cuda.is_available() else []
    ran = {}
    for name in ("float32", "bfloat16", "float16"):
        dtype = getattr(torch, name)
        sys.stdout.flush()
        print(f"PX_STEP matmul {name}", flush=True)
        try:
            a = torch.ones(64, 64, dtype=dtype)
            (a @ a).sum()
            ran[name] = "ok"
        except Exception as exc:
            ran[name] = f"{type(exc).__name__}: {exc}"
    out["matmul"] = ran
sys.stdout.flush()
print("PX_HARDWARE " + json.dumps(out), flush=True)
"""


def read_cpuinfo(path: str | Path = "/proc/cpuinfo") -> str:
    """The text of ``/proc/cpuinfo`` ("" where it cannot be read: not Linux, no permission)."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def library_probe(timeout: float = 120.0) -> dict[str, Any]:
    """Run :data:`_PROBE` in a fresh interpreter with ``ONEDNN_VERBOSE=1``: PyTorch's report
    (``torch_cpu_capability``, ``cuda_devices``, ``matmul`` per dtype), ``onednn_lines`` (oneDNN's
    verbose lines, each after the ``PX_STEP`` line naming the matmul it belongs to) and ``error``
    when the child failed."""
    env = {**os.environ, "ONEDNN_VERBOSE": "1", "DNNL_VERBOSE": "1"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"{type(exc).__name__}: {exc}", "onednn_lines": []}
    report: dict[str, Any] = {}
    lines = []
    for line in done.stdout.splitlines():
        if line.startswith(_MARK):
            try:
                report = json.loads(line[len(_MARK) :])
            except json.JSONDecodeError:
                report = {}
        elif line.startswith(("onednn_verbose,", "dnnl_verbose,", "PX_STEP ")):
            lines.append(line)
    if not report:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        report["error"] = f"the probe exited with status {done.returncode}: {tail[0][:300]}"
    report["onednn_lines"] = lines
    return report


def nvidia_smi(timeout: float = 30.0) -> list[dict[str, str]]:
    """Each GPU ``nvidia-smi`` lists (name, compute_cap, driver_version); [] when it is absent or fails."""
    command = shutil.which("nvidia-smi")
    if command is None:
        return []
    try:
        done = subprocess.run(
            [command, "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []
    gpus = []
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            gpus.append({"name": parts[0], "compute_capability": parts[1], "driver_version": parts[2]})
    return gpus
