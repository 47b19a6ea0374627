"""``precision-explorer hardware``: the CPU's features for low-precision arithmetic, what PyTorch and
oneDNN report taking, and the NVIDIA GPUs' tensor core formats."""

from __future__ import annotations

import argparse

VERB = "hardware"
HELP = "CPU flags (AVX-512 BF16/FP16, AMX, SVE, BF16 ...), PyTorch/oneDNN's reported path, GPU tensor cores"
JSON_RESULT = (
    "an object: cpu {architecture, model, flags: {every flag looked for (avx2, avx512f, avx512_bf16, "
    "avx512_fp16, amx_tile, amx_bf16, amx_fp16, ..., sve, sve2, bf16, asimdhp, ...): true or false}}, notes "
    "(what the flags mean), torch_cpu_capability, onednn {version, isa, primitives}, matmul_paths {dtype: "
    "oneDNN implementations PyTorch's CPU matmul ran}, library_notes, gpus [{name, compute_capability, "
    "read_by, tensor_cores}], tensor_core_table (per compute capability: formats and sources), error"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options."""
    from explorer.cli import add_json_argument

    parser.add_argument(
        "--no-libraries",
        action="store_true",
        help="read only the CPU flags and nvidia-smi (no PyTorch/oneDNN child process)",
    )
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Print the report."""
    from explorer.backends import get_backend
    from explorer.cli import print_json, print_table, safe_text
    from explorer.queries.hardware import hardware
    from explorer.queries.speed import not_installed

    # PyTorch is what reports oneDNN's path and the CUDA devices: without it, said in words
    missing = "" if get_backend("torch").is_installed() else not_installed("torch")
    report = hardware(probe_libraries=not args.no_libraries and not missing)
    if missing and not args.no_libraries:
        report.error = f"{missing} (no PyTorch/oneDNN report)"
    data = report.to_dict()
    if args.json:
        print_json(data)
        return 0
    cpu = data["cpu"]
    if missing:
        print(safe_text(f"{missing} (no PyTorch/oneDNN report; the CPU flags and nvidia-smi only)"))
    print(safe_text(f"CPU: {cpu['model'] or 'unknown model'} ({cpu['architecture']})"))
    print_table(
        [{"flag": k, "present": "yes" if v else "no"} for k, v in cpu["flags"].items()], ["flag", "present"]
    )
    for line in [*data["notes"], *data["library_notes"]]:
        print(safe_text(line))
    if data["error"] and not missing:
        print(safe_text(f"libraries: {data['error']}"))
    if not data["gpus"]:
        asked = "PyTorch was not asked" if args.no_libraries or missing else "PyTorch sees no CUDA device"
        print(f"GPUs: none found (no nvidia-smi, and {asked})")
    for gpu in data["gpus"]:
        cores = gpu["tensor_cores"]
        formats = (
            "not in the table" if cores is None else ", ".join(k for k, v in cores["formats"].items() if v)
        )
        print(
            safe_text(
                f"GPU: {gpu['name']}, compute capability {gpu['compute_capability']}: tensor cores {formats}"
            )
        )
    return 0
