"""``check_model`` on two real PyTorch architectures, built here with random weights (no download).

    python benchmarks/model_check_torch.py            # writes benchmarks/results/model_check_torch.md
    python benchmarks/model_check_torch.py --print    # the table on stdout only
    python benchmarks/model_check_torch.py --print --explorer DIR   # another checkout's explorer
    python benchmarks/model_check_torch.py --compare DIR  # and DIR's explorer, alternating; both in the file

- ``resnet18``: torchvision's ResNet-18 layout (BasicBlock ×[2, 2, 2, 2], BatchNorm, ReLU(inplace=True)),
  written below, 1000 classes, one 3×64×64 image;
- ``bert``: a BERT-style encoder: token and position embeddings, LayerNorm, 4
  ``torch.nn.TransformerEncoderLayer`` (d=128, 4 heads, feed-forward 512, GELU), sequence 32.

Each model runs in a fresh ``python``: ``explorer.check_model(model, x)`` with PyTorch's
default policies and devices, then again in the same process.  Measured: the first check's
wall time and CPU time (user + system of the process during the check), the second check's
wall time, the process's peak RSS (``ru_maxrss``), the op count, and each summary sentence.
``python -c "import torch"`` is timed in the same run for scale.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MODELS = ("resnet18", "bert")

_CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
import torch
sys.path.insert(0, sys.argv[2])
from model_check_torch import build
import explorer
torch.manual_seed(0)
model, x = build(sys.argv[1])
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
c1, t1 = cpu(), time.perf_counter()
check = explorer.check_model(model, x)
first, first_cpu = time.perf_counter() - t1, cpu() - c1
t2 = time.perf_counter()
again = explorer.check_model(model, x)
second = time.perf_counter() - t2
assert again.summary == check.summary
print(json.dumps({"first": first, "first_cpu": first_cpu, "second": second, "ops": len(check.ops),
                  "policies": list(check.policies), "summary": check.summary,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def resnet18() -> Any:
    """ResNet-18 (torchvision's layout), random weights."""
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = (
                nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                if stride != 1 or cin != cout
                else None
            )

        def forward(self, x: Any) -> Any:
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += identity
            return self.relu(out)

    class ResNet18(nn.Module):
        def __init__(self, classes: int = 1000) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            widths, cin, layers = (64, 128, 256, 512), 64, []
            for i, width in enumerate(widths):
                stride = 1 if i == 0 else 2
                layers.append(nn.Sequential(Block(cin, width, stride), Block(width, width, 1)))
                cin = width
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, classes)

        def forward(self, x: Any) -> Any:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(self.avgpool(x).flatten(1))

    return ResNet18()


def bert(vocab: int = 1000, d: int = 128, layers: int = 4, seq: int = 32) -> Any:
    """A BERT-style encoder (embeddings, LayerNorm, ``layers`` encoder layers), random weights."""
    import torch
    from torch import nn

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tokens = nn.Embedding(vocab, d)
            self.positions = nn.Embedding(seq, d)
            self.norm = nn.LayerNorm(d)
            layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.1, activation="gelu", batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.pooler = nn.Linear(d, d)

        def forward(self, ids: Any) -> Any:
            positions = torch.arange(ids.shape[1], device=ids.device)
            h = self.norm(self.tokens(ids) + self.positions(positions))
            h = self.encoder(h)
            return torch.tanh(self.pooler(h[:, 0]))

    return Encoder()


def build(name: str) -> tuple[Any, Any]:
    """(model, example input) of ``name`` (:data:`MODELS`), random weights, in eval mode."""
    import torch

    if name == "resnet18":
        return resnet18().eval(), torch.randn(1, 3, 64, 64)
    if name == "bert":
        return bert().eval(), torch.randint(0, 1000, (2, 32))
    raise ValueError(f"unknown model {name!r}; valid: {', '.join(MODELS)}")


def measure(name: str, explorer_root: str | None = None) -> dict[str, Any]:
    """One model's figures, from a fresh ``python`` started in ``explorer_root`` (the checkout
    whose ``explorer`` is imported; None: this one)."""
    here = Path(__file__).resolve().parent
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, name, str(here)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
        cwd=explorer_root or here.parent,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{name}: {proc.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def import_seconds() -> float:
    """``python -c "import torch"``'s wall time."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.perf_counter() - start


def report(rows: dict[str, dict[str, Any]], torch_import: float) -> str:
    """The results as Markdown."""
    git = ["git", "rev-parse", "--short", "HEAD"]
    commit = subprocess.run(git, capture_output=True, text=True, check=False).stdout.strip()
    lines = [
        "# check_model on PyTorch architectures",
        "",
        f"`python benchmarks/model_check_torch.py` at commit {commit}, {platform.machine()}, "
        f'Python {platform.python_version()}; `python -c "import torch"` took {torch_import:.1f} s in the '
        "same run. Wall figures on a shared 2-core machine (other jobs running): compare as ratios.",
        "",
        "| model | ops | policies | first check, wall s | first check, CPU s | second check, wall s "
        "| peak RSS MiB |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['ops']} | {', '.join(r['policies'])} | {r['first']:.1f} | {r['first_cpu']:.1f} "
            f"| {r['second']:.2f} | {r['peak_rss_mib']:.0f} |"
        )
    for name, r in rows.items():
        lines += ["", f"## {name}: summary sentences", ""]
        lines += [f"- {s}" for s in r["summary"]]
    return "\n".join(lines) + "\n"


def _table(rows: dict[str, dict[str, Any]], label: str) -> list[str]:
    lines = [
        f"| model ({label}) | first check, wall s | first check, CPU s | second check, wall s "
        "| peak RSS MiB |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['first']:.1f} | {r['first_cpu']:.1f} | {r['second']:.2f} "
            f"| {r['peak_rss_mib']:.0f} |"
        )
    return lines


def main(argv: list[str]) -> int:
    """Measure every model; write the results file unless ``--print`` or ``--explorer``."""
    root = argv[argv.index("--explorer") + 1] if "--explorer" in argv else None
    other = argv[argv.index("--compare") + 1] if "--compare" in argv else None
    torch_import = import_seconds()
    rows, others = {}, {}
    for name in MODELS:
        if other is not None:  # the other checkout first, then this one: the same load for both
            others[name] = measure(name, other)
        rows[name] = measure(name, root)
    text = report(rows, torch_import)
    if root is not None:  # not this checkout's commit: the explorer of another
        text = text.replace(
            "`python benchmarks/model_check_torch.py` at commit", f"`explorer` of {root}, benchmark at"
        )
    if other is not None:
        text += "\n".join(
            [
                "",
                f"## Against the explorer of {other} (`--compare`), measured alternately in the same run",
                "",
                *_table(others, "compared"),
                "",
                *_table(rows, "this checkout"),
            ]
        )
        text += "\n"
    print(text)
    if "--print" not in argv and root is None:
        path = Path(__file__).resolve().parent / "results" / "model_check_torch.md"
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
