"""``precision-explorer train``: train the digits model under Keras precision policies."""

from __future__ import annotations

import argparse

VERB = "train"
HELP = "train a small MLP/CNN on the bundled digits under mixed-precision policies (Keras on TensorFlow)"
JSON_RESULT = (
    "a list, one object per policy (policy, model, scenario, compute_dtype, variable_dtype, "
    "loss_scaling, history: [one object per epoch], final, grad_zero_fraction, skipped_steps, seconds, ...)"
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
    parser.add_argument("--out", metavar="DIR", help="write PNG plots (curves, histograms) to DIR")


def run(args: argparse.Namespace) -> int:
    """Train each policy and print a table (or ``--json``); everything is checked before TensorFlow loads."""
    import importlib.util
    import sys
    from pathlib import Path

    from explorer.cli import print_json, print_table
    from explorer.training import POLICY_NAMES, TrainingConfig, run_policies

    policies = args.policy or list(POLICY_NAMES)
    # validate everything before TensorFlow loads
    for p in policies:
        TrainingConfig(
            policy=p, model=args.model, scenario=args.scenario, epochs=args.epochs, seed=args.seed
        ).validated()
    if args.out is not None and Path(args.out).exists() and not Path(args.out).is_dir():
        raise ValueError(f"--out {args.out!r} exists and is not a directory")
    if not getattr(args, "verbose", False) and importlib.util.find_spec("tensorflow") is not None:
        # TensorFlow first, through the quiet import (its import-time C++ lines hidden), not
        # through Keras' plain ``import tensorflow``
        from explorer.backends.tensorflow_backend import import_tensorflow

        import_tensorflow()

    def progress(done: int, total: int) -> None:
        if not args.json and sys.stderr.isatty():
            print(f"\r{done}/{total} steps", end="", file=sys.stderr, flush=True)

    results = run_policies(
        policies,
        model=args.model,
        scenario=args.scenario,
        epochs=args.epochs,
        seed=args.seed,
        progress=progress,
    )
    if not args.json and sys.stderr.isatty():
        print(file=sys.stderr)
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


def _write_plots(results: list, out: str) -> None:
    from pathlib import Path

    from explorer.plots.training import plot_gradient_histogram, training_figure

    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    training_figure(results).savefig(directory / "training.png", dpi=110)
    for r in results:
        if r.histograms:
            ax = plot_gradient_histogram(r.histograms)
            ax.figure.savefig(directory / f"gradients_{r.policy}.png", dpi=110)
