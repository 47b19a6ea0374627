"""PyTorch (optional): probed only, since PyTorch has no dtype registry to read."""

from __future__ import annotations

import importlib.util
from functools import cache
from typing import Any

import numpy as np

from explorer.backends.base import Backend, first_output
from explorer.formats import Format
from explorer.ops import Op
from explorer.outcome import Outcome, Status


@cache
def import_torch() -> Any:
    import torch

    return torch


def torch_dtype(fmt: Format) -> Any | None:
    if fmt.emulated:
        return None
    return getattr(import_torch(), fmt.name, None)


class TorchBackend(Backend):
    """Runs each op's PyTorch call on CPU or CUDA."""

    name = "torch"

    def is_installed(self) -> bool:
        return importlib.util.find_spec("torch") is not None

    def version(self) -> str | None:
        return str(import_torch().__version__) if self.is_installed() else None

    def devices(self) -> list[str]:
        torch = import_torch()
        return ["CPU", "GPU"] if torch.cuda.is_available() else ["CPU"]

    def supports_format(self, fmt: Format) -> bool:
        return torch_dtype(fmt) is not None

    def _run(self, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format, device: str, mode: str) -> Outcome:
        if op.torch is None:
            return Outcome(Status.ERROR, error=f"PyTorch has no implementation of {op.name}")
        torch = import_torch()
        dtype = torch_dtype(fmt)
        target = "cuda" if device == "GPU" else "cpu"
        try:
            tensors = [torch.tensor(x, dtype=torch.float64).to(dtype).to(target) for x in inputs]
            out = first_output(op.torch(torch, dtype, *tensors))
        except (RuntimeError, TypeError, NotImplementedError) as exc:
            text = f"{type(exc).__name__}: {exc}"
            lowered = text.lower()
            if "not implemented for" in lowered:
                return Outcome(Status.NO_KERNEL, error=text)
            if "unsupported" in lowered or "not supported" in lowered or "promotion" in lowered:
                return Outcome(Status.UNSUPPORTED_DTYPE, error=text)
            return Outcome(Status.ERROR, error=text)
        ran_on = "GPU" if out.device.type == "cuda" else "CPU"
        if op.float_output and out.dtype != dtype:
            result = out.detach().cpu().to(torch.float64).numpy()
            return Outcome(
                Status.FALLBACK, result, ran_on, detail=f"result came back in {out.dtype}, not {fmt.name}"
            )
        if out.dtype.is_floating_point:
            result = out.detach().cpu().to(torch.float64).numpy().astype(fmt.storage_dtype)
        else:
            result = out.detach().cpu().numpy()
        return Outcome(Status.OK, result, ran_on)
