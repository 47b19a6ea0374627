"""``precision-explorer model``: which ops of a model run in which dtype on which device, what
mixed precision does to each, and which layer overflows first."""

from __future__ import annotations

import argparse
import os
from collections import Counter
from typing import Any

from explorer.runtime.keras_archive import LIMITS_TEXT

VERB = "model"
HELP = (
    "check a model (a built-in one, or a saved .keras file): each op's kernel per policy and device, "
    "its dtype under mixed precision, its float32 values against each format, the first problem"
)
EXIT_1 = (
    "the example inputs hold NaN/inf, or under some --policy the model does not run, overflows, has no "
    "gradient, loses its gradients or flushes more than 1% of an op's activations to zero"
)
JSON_RESULT = (
    "{framework, framework_version, policies, devices, formats, ops: [{index, layer, raw_op, op, "
    "data_movement, dtype: {policy: dtype}, kernel: {policy: {device: {declared, run, error, "
    "first_release}}}, amp: {policy: {in, out, layer_compute_dtype, layer_variable_dtype}, "
    "grappler_onednn_bfloat16: {dtype, observed} (Keras, where grappler rewrote the float32 graph "
    "here)}, max_abs, "
    "max_grad, stats, headroom_bits: {format: bits}, verdict: {format: fits|overflows|underflows|"
    "loses_gradients}}], results: [{policy, device, ran, error, failing_op, first_nonfinite, zero_grad, "
    "zero_grad_scaled, loss_scale, first_release, sentence, problem, step_time: {median, q1, q3, minimum, "
    "maximum, count, calls_per_sample, total} (seconds; with --time-steps, CPU rows) or null, "
    "step_ratio_to_float32}], summary: [sentence], "
    "first_problem: {kind, policy, device, index, layer, raw_op, detail, observed, workaround, tried, "
    "advice} or null, notes, block_formats: [name], weight_block_errors: {layer: {block format: RMS "
    "relative error of the layer's weights, blocked along the contraction axis}}, block_axis}"
)
NOTES = (
    "--file loads a Keras model with Keras' own loader under safe_mode=True: a file with Lambda "
    "layers or custom objects is refused (exit 2), nothing in it is run, and the file is only read. "
    "Without --inputs the example input is a seeded standard-normal sample of the model's input shape. "
    f"Limits: {LIMITS_TEXT}; refused with one line and exit 2."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options (names checked by argparse)."""
    from explorer.cli import add_device_argument, add_dtype_argument, add_json_argument
    from explorer.cli.blocks import block_format_name
    from explorer.runtime.model_builtin import BUILTINS, FRAMEWORKS

    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--builtin", choices=sorted(BUILTINS), metavar="NAME", help=f"{', '.join(BUILTINS)}")
    source.add_argument(
        "--file", metavar="PATH", help="a saved Keras model (.keras), loaded with safe_mode=True"
    )
    parser.add_argument(
        "--framework",
        choices=FRAMEWORKS,
        default="keras",
        help="the framework a --builtin model is built in; default: keras",
    )
    parser.add_argument("--inputs", metavar="FILE.npy", help="example inputs (a .npy array, no pickles)")
    parser.add_argument(
        "--policy",
        action="append",
        metavar="NAME",
        help="Keras: as_built (the model's own dtypes), float32 (everything in float32), mixed_float16, "
        "mixed_bfloat16, float16, bfloat16 (these keep each layer built in a dtype of its own); PyTorch: "
        "float32, float16, bfloat16, autocast_float16, autocast_bfloat16; repeat for several; default: "
        "as_built where the framework has it, float32 and the framework's two mixed policies",
    )
    parser.add_argument(
        "--time-steps",
        action="store_true",
        help="also time a plain training step (forward and backward) per policy here on the CPU: warm-up, "
        "repeated samples, median, spread and ratio to float32 (about 0.2 s per policy more)",
    )
    add_device_argument(parser, default="CPU and GPU (GPU: declared kernels only without one)")
    add_dtype_argument(parser, default="float16, bfloat16, float8_e4m3fn, float8_e5m2 (formats judged)")
    parser.add_argument(
        "--block-format",
        action="append",
        type=block_format_name,
        metavar="NAME",
        help="a block format (mxfp8_e4m3, mxfp8_e5m2, mxfp6_e2m3, mxfp6_e3m2, mxfp4_e2m1, mxint8, "
        "nvfp4) each layer's weights are quantized to (RMS relative error); repeat for several",
    )
    add_json_argument(parser)


def _load(args: argparse.Namespace) -> tuple[Any, tuple[Any, ...], str]:
    """The model, its example inputs and the framework it is in (ValueError/OSError: usage)."""
    import numpy as np

    from explorer.runtime import model_builtin, model_keras
    from explorer.runtime.keras_archive import check_keras_archive
    from explorer.runtime.tensor_file import load_tensor

    # the inputs file is read (its header checked first) before any framework is imported
    try:
        loaded = load_tensor(args.inputs) if args.inputs else None
    except ValueError as exc:  # said with the option it came from
        raise ValueError(f"--inputs: {exc}") from None
    if args.builtin:
        model = model_builtin.build(args.builtin, args.framework)
        inputs = model_builtin.example_inputs(args.builtin, args.framework)
        framework = args.framework
    else:
        if args.framework != "keras":
            raise ValueError("--file takes a Keras model (.keras); --framework torch is for --builtin")
        if not str(args.file).endswith(".keras"):
            raise ValueError(f"--file must be a .keras file, got {args.file!r}")
        # the archive is checked (explorer.runtime.keras_archive) before Keras is imported
        check_keras_archive(args.file)
        model = model_keras.load_safely(os.path.realpath(args.file))
        inputs = tuple(model_keras.example_inputs_for(model))
        framework = "keras"
    if loaded is not None:
        expected = [x.shape for x in inputs]
        if len(expected) != 1 or not _shape_fits(loaded.shape, expected[0]):
            wanted = ", ".join(_shape_text(s) for s in expected)
            raise ValueError(
                f"--inputs {args.inputs!r} has shape {tuple(loaded.shape)}; the model takes {wanted} "
                "(any batch size)"
            )
        inputs = (np.asarray(loaded, dtype=np.float32),)
    return model, inputs, framework


def _shape_fits(shape: tuple[int, ...], expected: tuple[int, ...]) -> bool:
    """Whether an array of ``shape`` fits an input of ``expected`` shape, whose first (batch)
    dimension may differ.

    >>> _shape_fits((2, 16), (8, 16)), _shape_fits((2, 7), (8, 16)), _shape_fits((16,), (8, 16))
    (True, False, False)
    """
    return len(shape) == len(expected) and tuple(shape[1:]) == tuple(expected[1:]) and shape[0] > 0


def _shape_text(shape: tuple[int, ...]) -> str:
    """A model input's shape with its batch dimension as ``None``.

    >>> _shape_text((8, 16))
    '(None, 16)'
    """
    return str((None, *shape[1:]))


def run(args: argparse.Namespace) -> int:
    """Check the model; print the sentences, the first problem and the ops (or JSON)."""
    from explorer.cli import print_json, print_table, safe_text, unique
    from explorer.queries.model_check import check_model
    from explorer.runtime import model_keras, model_torch

    runner = model_torch if args.builtin and args.framework == "torch" else model_keras
    for policy in unique(args.policy):  # before anything is loaded or run
        runner.check_policy(policy)
    from explorer.cli._progress import elapsed, wanted

    with elapsed("loading and checking the model", wanted(args.json)):
        model, inputs, _ = _load(args)
        check = check_model(
            model,
            inputs,
            policies=unique(args.policy) or None,
            devices=unique(args.device) or None,
            formats=unique(args.dtype) or None,
            block_formats=unique(args.block_format) or None,
            time_steps=args.time_steps,
        )
    status = 0 if check.ok else 1
    if args.json:
        print_json(check.to_dict())
        return status
    for sentence in check.summary:
        print(safe_text(sentence))
    problem = check.first_problem
    print()
    if problem is None:
        print("first problem: none")
    else:
        where = f"`{problem.layer or '(model)'}` ({problem.raw_op})" if problem.raw_op else "the model"
        print(
            safe_text(f"first problem: {problem.kind} under {problem.policy} on {problem.device} at {where}")
        )
        if problem.workaround:
            print(safe_text(f"  workaround: {problem.workaround}"))
    print()
    rows: list[dict[str, Any]] = []
    moved: Counter[tuple[str, str]] = Counter()
    for op in check.ops:
        if op.data_movement:
            moved[(op.layer, op.raw_op)] += 1
            continue
        rows.append(
            {
                "#": op.index,
                "layer": op.layer or "(model)",
                "raw_op": op.raw_op,
                "op": op.op,
                "dtype": "/".join(str(op.dtype[p] or "-") for p in check.policies),
                "max_abs": op.max_abs,
                "max_grad": op.max_grad,
                **{f: op.verdict.get(f, "") for f in check.formats},
            }
        )
    print(f"ops (dtype per policy: {'/'.join(check.policies)}):")
    print_table(rows, ["#", "layer", "raw_op", "op", "dtype", "max_abs", "max_grad", *check.formats])
    if moved:
        grouped = ", ".join(f"{layer or '(model)'} {raw_op} x{n}" for (layer, raw_op), n in moved.items())
        print(safe_text(f"data movement ({sum(moved.values())} ops, grouped): {grouped}"))
    if check.weight_block_errors:
        print("weights quantized to each block format (RMS relative error):")
        blocks = [{"layer": layer or "(model)", **errs} for layer, errs in check.weight_block_errors.items()]
        print_table(blocks, ["layer", *check.block_formats])
    for note in check.notes:
        print(safe_text(f"note: {note}"))
    return status
