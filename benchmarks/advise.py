"""``advise_precision`` on three models: the recipe's measured error against the baselines, and
the sensitivity pass's time against importing TensorFlow.

    python -m benchmarks.advise              # from the repository root; writes benchmarks/results/advise.md

Models (random weights, except where a trained one is named):

- ``cnn``: the built-in CNN in Keras (:mod:`explorer.runtime.model_builtin`), its example input
  (4 x 16 x 16 x 3); and trained on the digits
  (:func:`explorer.training.trained_builtin.trained_builtin`), metric its accuracy on the 360
  validation digits, at a 10% and a 25% keep budget;
- MobileNetV2: ``keras.applications.MobileNetV2(input_shape=(96, 96, 3), weights=None,
  classes=10, classifier_activation=None)`` (logits), 4 seeded standard-normal images;
- ResNet18: written here in PyTorch (BasicBlock x [2, 2, 2, 2], 10 classes, torch's default
  initialisation, seed 0), 4 seeded standard-normal 3 x 64 x 64 images.

For each model one :func:`explorer.advise_precision` call with 4 formats (mxfp4_e2m1, nvfp4,
float8_e4m3fn, mxfp8_e4m3), metric relative RMS of the outputs, a 10% keep budget, 5 random
seeds; the table gives MXFP4 and NVFP4.  The sensitivity time is the call's own
``seconds["sensitivity"]`` (every covered layer x the 4 formats); ``python -c "import
tensorflow"`` is timed in a child process in the same run, before this process imports
TensorFlow.  Peak RSS: ``ru_maxrss`` of this process at the end and of the import child.
"""

from __future__ import annotations

import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

FORMATS = ["mxfp4_e2m1", "nvfp4", "float8_e4m3fn", "mxfp8_e4m3"]
SHOWN = ["mxfp4_e2m1", "nvfp4"]
BUDGET = 0.1
RESULTS = Path(__file__).parent / "results" / "advise.md"


def resnet18(torch: Any, classes: int = 10) -> Any:
    """ResNet18 (He et al. 2016): a 7x7 stem, 4 stages of 2 BasicBlocks, a linear head."""
    nn = torch.nn

    class BasicBlock(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x: Any) -> Any:
            identity = x if self.downsample is None else self.downsample(x)
            out = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(out)) + identity)

    class ResNet18(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.pool = nn.MaxPool2d(3, 2, 1)
            widths = [64, 128, 256, 512]
            layers = []
            cin = 64
            for i, w in enumerate(widths):
                stride = 1 if i == 0 else 2
                layers.append(nn.Sequential(BasicBlock(cin, w, stride), BasicBlock(w, w, 1)))
                cin = w
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.fc = nn.Linear(512, classes)

        def forward(self, x: Any) -> Any:
            x = self.pool(torch.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))

    torch.manual_seed(0)
    return ResNet18().eval()


def time_tensorflow_import() -> tuple[float, float]:
    """Seconds of ``python -c "import tensorflow"`` in a child, and its peak RSS (MiB)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import tensorflow"], check=True, capture_output=True)
    seconds = time.perf_counter() - start
    return seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def models() -> list[tuple[str, Any, list[np.ndarray], Any, float]]:
    """(name, model, inputs, labels, keep budget) of each case."""
    from explorer.backends.tensorflow_backend import import_tensorflow
    from explorer.runtime import model_builtin

    import_tensorflow()
    import keras
    import torch

    rng = np.random.default_rng(0)
    keras.utils.set_random_seed(0)
    mobilenet = keras.applications.MobileNetV2(
        input_shape=(96, 96, 3), weights=None, classes=10, classifier_activation=None
    )
    from explorer.training.trained_builtin import trained_builtin

    trained = trained_builtin("cnn", "keras")
    cnn = model_builtin.build("cnn", "keras")
    images = [rng.standard_normal((4, 96, 96, 3)).astype(np.float32)]
    torch_images = [rng.standard_normal((4, 3, 64, 64)).astype(np.float32)]
    return [
        ("cnn (built-in, Keras)", cnn, list(model_builtin.example_inputs("cnn")), None, BUDGET),
        ("cnn trained on digits (Keras)", trained.model, [trained.x_val], trained.y_val, BUDGET),
        ("cnn trained on digits (Keras)", trained.model, [trained.x_val], trained.y_val, 0.25),
        ("MobileNetV2 96x96 (Keras)", mobilenet, images, None, BUDGET),
        ("ResNet18 64x64 (PyTorch)", resnet18(torch), torch_images, None, BUDGET),
    ]


def main() -> int:
    import_seconds, import_rss = time_tensorflow_import()
    from explorer.queries.advise import advise_precision

    lines = [
        "# advise_precision: recipe vs baselines, and the sensitivity pass's time",
        "",
        "`python -m benchmarks.advise` on " + f"{platform.machine()}, {platform.python_version()}; "
        f"{len(FORMATS)} formats ({', '.join(FORMATS)}), metric relative RMS of the outputs against the "
        f"float32 model, keep budget {BUDGET:g} of the covered weights, random baseline: median of 5 seeds.",
        "",
        "| model | metric | budget | covered layers | format | recipe | every layer "
        "| first and last (kept share) | random median (5 seeds) | recipe keeps |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    timing: list[str] = []
    ratios: list[str] = []
    for name, model, inputs, labels, budget in models():
        advice = advise_precision(model, inputs, formats=FORMATS, budget=budget, labels=labels, seeds=5)
        metric = "accuracy points lost" if labels is not None else "relative RMS"
        for fmt in SHOWN:
            a = advice.for_format(fmt)
            kept = ", ".join(a.recipe.kept) or "none"
            first_last = f"{a.first_and_last.error:.4g} ({a.first_and_last.kept_fraction:.1%})"
            lines.append(
                f"| {name} | {metric} | {budget:g} | {len(advice.layers)} | {fmt} | {a.recipe.error:.4g} "
                f"| {a.every_layer.error:.4g} | {first_last} | {a.random.error:.4g} "
                f"| {kept} ({a.recipe.kept_fraction:.1%}) |"
            )
        if labels is not None:
            timing.append(
                f"- {name}: float32 accuracy on its {len(labels)} validation digits "
                f"{advice.float32_value:.4f}"
            )
        timing.append(
            f"- {name}: sensitivity {advice.seconds['sensitivity']:.1f} s ({len(advice.layers)} layers x "
            f"{len(FORMATS)} formats = {len(advice.layers) * len(FORMATS)} runs), setup "
            f"{advice.seconds['setup']:.1f} s, recipes and baselines {advice.seconds['recipes']:.1f} s"
        )
        if name.startswith("MobileNetV2"):
            ratios.append(
                f"- MobileNetV2 96x96 sensitivity, {len(FORMATS)} formats, over `import tensorflow`: "
                f"{advice.seconds['sensitivity'] / import_seconds:.2f}x"
            )
        print(lines[-2], lines[-1], timing[-1], sep="\n", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines += [
        "",
        "Errors, lower is better: relative RMS of the model's output (logits) against the float32 model's "
        "(random weights), or the float32 model's accuracy minus this one's on the 360 validation digits "
        "(trained CNN).  First and last keeps the first and last covered layers whatever the budget "
        "(its kept share in brackets); the recipe and the random choice keep at most the budget.",
        "",
        "## Time and memory",
        "",
        *timing,
        f'- `python -c "import tensorflow"` in the same run: {import_seconds:.1f} s '
        f"(peak RSS {import_rss:.0f} MiB)",
        *ratios,
        f"- load average (1, 5, 15 min) at the end: {', '.join(f'{v:.1f}' for v in os.getloadavg())} "
        f"on {os.cpu_count()} CPUs (a machine shared with other jobs: times vary from run to run)",
        f"- this process's peak RSS (TensorFlow, PyTorch, the three models, every run): {peak:.0f} MiB",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
