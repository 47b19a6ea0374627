"""``precision-explorer train``: train the digits model under Keras precision policies."""

from __future__ import annotations

import argparse
from typing import Any

VERB = "train"
HELP = "train a small MLP/CNN on the bundled digits under mixed-precision policies (Keras on TensorFlow)"
JSON_RESULT = (
    "a list, one object per policy (policy, model, scenario, compute_dtype, variable_dtype, "
    "loss_scaling, history: [one object per epoch: epoch, loss, accuracy, val_loss, val_accuracy, "
    "loss_scale, grad_zero_fraction, grad_subnormal_fraction, grad_nonfinite_fraction, skipped_steps, "
    "seconds_per_step], final: {loss, accuracy, val_loss, val_accuracy, loss_scale}, skipped_steps, "
    "seconds, cancelled, stopped_early)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options (numbers checked by argparse; names by ``TrainingConfig`` in ``run``)."""
    from explorer.cli import add_json_argument, bounded_int, positive_int
    from explorer.training import MAX_EPOCHS, MAX_SEED

    parser.add_argument(
        "--policy",
        action="append",
        metavar="P",
        help="policy to train (repeatable; default: all six): float32, mixed_float16, "
        "mixed_float16_no_scaling, mixed_bfloat16, float16, bfloat16",
    )
    parser.add_argument("--model", default="mlp", help="mlp or cnn (default mlp)")
    parser.add_argument(
        "--epochs",
        type=positive_int(MAX_EPOCHS),
        default=None,
        help=f"epochs (default 10, at most {MAX_EPOCHS})",
    )
    parser.add_argument(
        "--scenario",
        default="default",
        help="default, or underflow (loss x 2**-18: float16 gradients flush to zero)",
    )
    parser.add_argument(
        "--seed", type=bounded_int(0, MAX_SEED), default=0, help=f"random seed (default 0; 0 to {MAX_SEED})"
    )
    add_json_argument(parser)
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="write PNG plots (training.png, gradients_POLICY.png) to DIR, replacing files of those "
        "names; DIR is made if missing, but its parent folder must exist",
    )


def run(args: argparse.Namespace) -> int:
    """Train each policy and print a table (or ``--json``); everything is checked before TensorFlow loads."""
    import importlib.util

    from explorer.cli import print_json, print_table
    from explorer.training import POLICY_NAMES, TrainingConfig, run_policies

    policies = args.policy or list(POLICY_NAMES)
    # validate everything before TensorFlow loads
    for p in policies:
        TrainingConfig(
            policy=p, model=args.model, scenario=args.scenario, epochs=args.epochs, seed=args.seed
        ).validated()
    if args.out is not None:
        check_out_directory(args.out)
    if not getattr(args, "verbose", False) and importlib.util.find_spec("tensorflow") is not None:
        # TensorFlow first, through the quiet import (its import-time C++ lines hidden), not
        # through Keras' plain ``import tensorflow``
        from explorer.backends.tensorflow_backend import import_tensorflow

        import_tensorflow()

    from explorer.cli._progress import bar, wanted

    shown = wanted(args.json)
    steps: list[Any] = []  # the bar, made once the total is known

    def progress(done: int, total: int) -> None:
        if not steps:
            steps.append(bar(total, "training", "step", shown))
        if steps[0] is not None:
            steps[0].update(done - steps[0].n)

    try:
        results = run_policies(
            policies,
            model=args.model,
            scenario=args.scenario,
            epochs=args.epochs,
            seed=args.seed,
            progress=progress,
        )
    finally:
        if steps and steps[0] is not None:
            steps[0].close()
    if args.out:
        _write_plots(results, args.out)
    if args.json:
        print_json([r.to_dict() for r in results])
        return 0
    rows = []
    for r in results:
        f = r.final
        rows.append(
            {
                "policy": r.policy,
                "compute": r.compute_dtype,
                "variables": r.variable_dtype,
                "loss": f["loss"],
                "accuracy": f["accuracy"],
                "val_loss": f["val_loss"],
                "val_accuracy": f["val_accuracy"],
                "loss_scale": f["loss_scale"],
                "grad_zero": r.grad_zero_fraction,
                "skipped": r.skipped_steps,
                "seconds": round(r.seconds, 2),
            }
        )
    print_table(rows, list(rows[0]))
    if args.out:
        print(f"plots written to {args.out}")
    return 0


def check_out_directory(out: str) -> None:
    """ValueError (one line) unless ``--out`` names a directory, or a missing one whose parent
    folder exists (only the last folder is made, as ``mkdir`` without ``-p``)."""
    from pathlib import Path

    from explorer.textsafety import strip_control

    directory = Path(out)
    shown = strip_control(repr(out))
    if not out.strip():
        raise ValueError("--out '': the folder name is empty")
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"--out {shown} exists and is not a directory")
    if not directory.exists() and not directory.parent.is_dir():
        raise ValueError(
            f"--out {shown}: its parent folder {strip_control(str(directory.parent))} does not exist"
        )


def _write_plots(results: list, out: str) -> None:
    """Each plot written whole (a temporary file renamed over the PNG), or not at all."""
    import io
    from pathlib import Path

    from explorer.plots.training import plot_gradient_histogram, training_figure
    from explorer.runtime.atomic_file import write_bytes_atomically

    def save(figure: Any, name: str) -> None:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=110)
        write_bytes_atomically(directory / name, buffer.getvalue())

    directory = Path(out)
    directory.mkdir(exist_ok=True)
    save(training_figure(results), "training.png")
    for r in results:
        if r.histograms:
            save(plot_gradient_histogram(r.histograms).figure, f"gradients_{r.policy}.png")
