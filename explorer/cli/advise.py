"""``precision-explorer advise``: which layers of a model to keep in higher precision for a
low-precision format, found from each layer's sensitivity under a budget, and measured."""

from __future__ import annotations

import argparse
from typing import Any

VERB = "advise"
HELP = (
    "which layers to keep in higher precision: each covered layer alone quantized to each --format "
    "(its error against the float32 model), a recipe under a budget found by an integer program, "
    "then the recipe run beside every layer quantized, first and last kept, and a random choice"
)
JSON_RESULT = (
    "{framework, metric, float32_value, keep, budget: {keep_fraction, bits_per_param}, formats, "
    "layers: [{name, kind, params}], sensitivity: [{layer, format, value, error}], advice: [{format, "
    "recipe, every_layer, first_and_last, random: {name, kept, kept_fraction, bits_per_param, value, "
    "error, seed_errors}, estimated_error, quantized, code}], covered, seconds} (non-finite numbers: null)"
)
NOTES = (
    "Covered layers: Keras Dense and Conv1D/2D/3D, PyTorch Linear and Conv1d/2d/3d (groups 1); their "
    "weights and input activations are quantized (block formats in blocks along the contraction axis), "
    "the multiply accumulates in float32; every other layer stays float32.  --file loads a Keras model "
    "with safe_mode=True.  Without --inputs the example input is a seeded standard-normal sample."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options (names checked by argparse)."""
    from explorer.analysis.precision_advice import ADVICE_FORMATS, KEEP_FORMATS, METRICS
    from explorer.cli import add_json_argument, bounded_int
    from explorer.runtime.model_builtin import BUILTINS, FRAMEWORKS

    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--builtin", choices=sorted(BUILTINS), metavar="NAME", help=", ".join(BUILTINS))
    source.add_argument(
        "--file", metavar="PATH", help="a saved Keras model (.keras), loaded with safe_mode=True"
    )
    parser.add_argument(
        "--framework", choices=FRAMEWORKS, default="keras", help="the framework a --builtin model is built in"
    )
    parser.add_argument(
        "--trained",
        action="store_true",
        help="--builtin cnn trained on scikit-learn's digits (cached); inputs and labels: its 360 "
        "validation digits unless --inputs/--labels are given (metric: accuracy)",
    )
    parser.add_argument(
        "--inputs", metavar="FILE.npy", help="example inputs (a .npy float array, no pickles)"
    )
    parser.add_argument(
        "--labels", metavar="FILE.npy", help="integer class labels, one per input row (metric: accuracy)"
    )
    parser.add_argument(
        "--format",
        action="append",
        required=True,
        metavar="FMT",
        help=f"a format to advise for ({', '.join(ADVICE_FORMATS)}); repeat for several",
    )
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument(
        "--keep-budget",
        type=_fraction,
        metavar="FRACTION",
        help="the largest share of the covered weights kept in higher precision (default 0.1)",
    )
    budget.add_argument(
        "--bits-budget", type=_bits, metavar="BITS", help="the average bits per covered weight allowed"
    )
    parser.add_argument("--metric", choices=METRICS, default="relative_rms", help="default relative_rms")
    parser.add_argument(
        "--keep", choices=KEEP_FORMATS, default="float32", help="the precision kept layers run in"
    )
    parser.add_argument("--seeds", type=bounded_int(1, 50), default=5, help="random baseline seeds (5)")
    parser.add_argument("--plot", metavar="FILE.png", help="write the sensitivity plot there")
    add_json_argument(parser)


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text!r}")
    return value


def _bits(text: str) -> float:
    value = float(text)
    if not 0.0 < value <= 64.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 64], got {text!r}")
    return value


#: the most values --inputs or --labels may hold (each run converts them to float32)
MAX_VALUES = 1 << 24


def _load_array(path: str, what: str) -> Any:
    """A plain .npy array (no pickles), its size read from the header before its data."""
    import numpy as np

    try:
        header = np.load(path, allow_pickle=False, mmap_mode="r")
        if header.size > MAX_VALUES:
            raise ValueError(f"{what} {path!r} holds {header.size} values; at most {MAX_VALUES}")
        return np.array(header)
    except ValueError as exc:
        if "at most" in str(exc):
            raise
        raise ValueError(f"{what} {path!r} is not a plain .npy array ({exc})") from None


def _load(args: argparse.Namespace) -> tuple[Any, list[Any], Any]:
    """The model, its example inputs and the labels (ValueError/OSError: usage)."""
    import numpy as np

    from explorer.runtime import model_builtin, model_keras

    labels = None
    if args.trained:
        if args.builtin != "cnn":
            raise ValueError("--trained takes --builtin cnn")
        from explorer.training.trained_builtin import trained_builtin

        trained = trained_builtin("cnn", args.framework)
        model, inputs = trained.model, [trained.x_val]
        labels = None if args.inputs else trained.y_val
    elif args.builtin:
        model = model_builtin.build(args.builtin, args.framework)
        inputs = list(model_builtin.example_inputs(args.builtin, args.framework))
    else:
        if args.framework != "keras":
            raise ValueError("--file takes a Keras model (.keras); --framework torch is for --builtin")
        if not str(args.file).endswith(".keras"):
            raise ValueError(f"--file must be a .keras file, got {args.file!r}")
        with open(args.file, "rb"):
            pass
        model = model_keras.load_safely(args.file)
        inputs = list(model_keras.example_inputs_for(model))
    if args.inputs:
        loaded = _load_array(args.inputs, "--inputs")
        if not (np.issubdtype(loaded.dtype, np.floating) or np.issubdtype(loaded.dtype, np.integer)):
            raise ValueError(f"--inputs {args.inputs!r} holds {loaded.dtype} values; give a float array")
        if len(inputs) != 1 or loaded.ndim != inputs[0].ndim or loaded.shape[1:] != inputs[0].shape[1:]:
            raise ValueError(
                f"--inputs {args.inputs!r} has shape {tuple(loaded.shape)}; the model takes "
                f"{(None, *inputs[0].shape[1:])} (any batch size)"
            )
        if loaded.shape[0] == 0 or not np.all(np.isfinite(loaded)):
            raise ValueError(f"--inputs {args.inputs!r} is empty or holds NaN/inf")
        inputs = [np.asarray(loaded, dtype=np.float32)]
    if args.labels:
        labels = _load_array(args.labels, "--labels")
        if not np.issubdtype(labels.dtype, np.integer) or labels.ndim != 1:
            raise ValueError(f"--labels {args.labels!r} must be a 1-D integer array")
        if labels.shape[0] != inputs[0].shape[0]:
            raise ValueError(f"--labels has {labels.shape[0]} labels for {inputs[0].shape[0]} input rows")
    return model, inputs, labels


def run(args: argparse.Namespace) -> int:
    """Advise; print the sensitivity table and each format's recipe beside the baselines (or JSON)."""
    from explorer.analysis.precision_advice import advice_format
    from explorer.cli import print_json, print_table, safe_text, unique
    from explorer.queries.advise import advise_precision

    formats = [advice_format(f) for f in unique(args.format)]  # ValueError before loading: usage
    model, inputs, labels = _load(args)
    advice = advise_precision(
        model,
        inputs,
        formats=formats,
        budget=args.keep_budget,
        bits_budget=args.bits_budget,
        metric=args.metric,
        labels=labels,
        keep=args.keep,
        seeds=args.seeds,
    )
    if args.plot:
        from explorer.plots.advise import plot_sensitivity

        plot_sensitivity(
            [layer.name for layer in advice.layers],
            list(advice.formats),
            [[advice.cell(layer.name, f).error for layer in advice.layers] for f in advice.formats],
            metric=advice.metric,
        ).savefig(args.plot, dpi=110)
    if args.json:
        print_json(advice.to_dict())
        return 0
    print(safe_text(f"{advice.framework}: metric {advice.metric}; float32 value {advice.float32_value:.6g}"))
    print(safe_text(f"covered layers: {advice.covered}; kept layers run in {advice.keep}"))
    print("sensitivity (error added by each layer alone quantized):")
    rows = [
        {"layer": layer.name, "kind": layer.kind, "params": layer.params,
         **{f: advice.cell(layer.name, f).error for f in advice.formats}}
        for layer in advice.layers
    ]  # fmt: skip
    print_table(rows, ["layer", "kind", "params", *advice.formats])
    print(safe_text(f"budget: {advice.budget.describe()}"))
    for a in advice.advice:
        print()
        print(safe_text(f"{a.format}: keep {', '.join(a.recipe.kept) or 'none'}"))
        choices = [
            {"choice": c.name, "kept_fraction": c.kept_fraction, "bits_per_param": c.bits_per_param,
             "value": c.value, "error": c.error}
            for c in a.choices
        ]  # fmt: skip
        print_table(choices, ["choice", "kept_fraction", "bits_per_param", "value", "error"])
        print("recipe as code:")
        for line in a.code.rstrip().splitlines():
            print("    " + safe_text(line))
    return 0
