"""Append real error texts to the error-text corpus (issue 34 item 5), validated.

Reads JSON from stdin: one object, a JSON list of objects, or one object per line.
Each object follows tests/data/error_corpus/README.md (the corpus schema).  When
"id" is missing it is assigned as ``<source>-<nnn>`` with the next free number.
Every object is validated before anything is written; the text goes to
heldout.jsonl when ``int(sha1(url + text[:200]).hexdigest(), 16) % 2 == 1``,
else to dev.jsonl.  Stdlib only.

    python scripts/error_corpus_add.py < entry.json
    python scripts/error_corpus_add.py --counts    # texts per source and half
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "error_corpus"
HALVES = ("dev.jsonl", "heldout.jsonl")

SOURCES = [
    "pytorch-float8",
    "torch-compile-triton",
    "onednn-bf16",
    "gradscaler",
    "conv-dtype-mismatch",
    "mps",
    "torchao",
    "transformer-engine",
    "bitsandbytes",
    "onnxruntime",
    "tensorrt",
    "torch-tensorrt",
    "keras-quantization",
    "jax",
    "deepspeed",
    "tensorflow-kernel",
    "pytorch-kernel",
    "xla",
    "vllm",
    "other",
]
FRAMEWORKS = {"torch", "tensorflow", "keras", "jax", "onnxruntime", "tensorrt", "numpy", None}
LIBRARIES = set(
    [
        "torch",
        "torchao",
        "transformer_engine",
        "bitsandbytes",
        "tensorrt",
        "torch_tensorrt",
        "vllm",
        "deepspeed",
        "onnxruntime",
        "onnxconverter_common",
        "keras",
        "tensorflow",
        "jax",
        "triton",
        "xla",
        "mps",
    ]
) | {None}
DTYPES = set(
    [
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float4_e2m1fn",
        "float8_e8m0fnu",
        "complex64",
        "complex128",
        "int8",
        "uint8",
        "int32",
        "int64",
        "bool",
        "mxfp8",
        "mxfp6",
        "mxfp4",
        "nvfp4",
    ]
)
DEVICE_TYPES = {"cpu", "cuda", "rocm", "mps", "xpu", "tpu", "directml", None}
KINDS = set(
    [
        "missing_kernel",
        "hardware_gate",
        "dtype_mismatch",
        "lowering_refused",
        "quantization_constraint",
        "conversion_error",
        "loss_scaling",
        "overflow_nan",
        "other",
    ]
)
TOP_KEYS = {"id", "url", "source", "release", "text", "expected"}
EXPECTED_KEYS = {"framework", "library", "op", "dtypes", "device", "kind"}
DEVICE_KEYS = {"type", "compute_capability", "name", "macos", "isa"}
MAX_TEXT = 6000


def split_of(url: str, text: str) -> str:
    """Return the file name (dev.jsonl or heldout.jsonl) the sha1 rule assigns."""
    digest = hashlib.sha1((url + text[:200]).encode("utf-8")).hexdigest()
    return HALVES[1] if int(digest, 16) % 2 == 1 else HALVES[0]


def _opt_str(value: object) -> bool:
    return value is None or (isinstance(value, str) and value.strip() != "")


def validate(entry: dict, *, need_id: bool = True) -> list[str]:
    """Return the list of schema problems of one entry ([] when it is valid)."""
    problems: list[str] = []
    if not isinstance(entry, dict):
        return ["entry is not an object"]
    keys = set(entry)
    wanted = TOP_KEYS if need_id else TOP_KEYS - {"id"}
    if not wanted <= keys or not keys <= TOP_KEYS:
        problems.append(f"keys {sorted(keys)} != {sorted(TOP_KEYS)}")
    if "id" in entry:
        ok = isinstance(entry["id"], str) and re.fullmatch(r"([a-z0-9-]+)-(\d{3})", entry["id"])
        if not ok or entry["id"].rsplit("-", 1)[0] != entry.get("source"):
            problems.append(f"bad id {entry.get('id')!r}")
    url = entry.get("url")
    if not (isinstance(url, str) and url.startswith("https://") and not re.search(r"\s", url)):
        problems.append(f"bad url {url!r}")
    if entry.get("source") not in SOURCES:
        problems.append(f"bad source {entry.get('source')!r}")
    if not _opt_str(entry.get("release")):
        problems.append("release must be a non-empty string or null")
    text = entry.get("text")
    if not (isinstance(text, str) and text.strip() and len(text) <= MAX_TEXT):
        problems.append("text must be a non-empty string of at most 6000 characters")
    exp = entry.get("expected")
    if not isinstance(exp, dict) or set(exp) != EXPECTED_KEYS:
        return [*problems, f"expected keys must be {sorted(EXPECTED_KEYS)}"]
    if exp["framework"] not in FRAMEWORKS:
        problems.append(f"bad framework {exp['framework']!r}")
    if exp["library"] not in LIBRARIES:
        problems.append(f"bad library {exp['library']!r}")
    if not _opt_str(exp["op"]):
        problems.append("op must be a non-empty string or null")
    dts = exp["dtypes"]
    if not isinstance(dts, list) or any(d not in DTYPES for d in dts) or len(set(dts)) != len(dts):
        problems.append(f"bad dtypes {dts!r}")
    dev = exp["device"]
    if not isinstance(dev, dict) or set(dev) != DEVICE_KEYS:
        return [*problems, f"device keys must be {sorted(DEVICE_KEYS)}"]
    if dev["type"] not in DEVICE_TYPES:
        problems.append(f"bad device type {dev['type']!r}")
    cc = dev["compute_capability"]
    if cc is not None and not (isinstance(cc, str) and re.fullmatch(r"\d{1,2}\.\d", cc)):
        problems.append(f"bad compute_capability {cc!r}")
    for key in ("name", "macos", "isa"):
        if not _opt_str(dev[key]):
            problems.append(f"device.{key} must be a non-empty string or null")
    if exp["kind"] not in KINDS:
        problems.append(f"bad kind {exp['kind']!r}")
    return problems


def load_all() -> list[dict]:
    """Return every entry already in both halves."""
    entries: list[dict] = []
    for name in HALVES:
        path = CORPUS_DIR / name
        if path.exists():
            entries += [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]
    return entries


def _read_stdin(raw: str) -> list[dict]:
    raw = raw.strip()
    if raw.startswith("["):
        return json.loads(raw)
    try:
        return [json.loads(raw)]
    except json.JSONDecodeError:
        return [json.loads(line) for line in raw.splitlines() if line.strip()]


def add(new: list[dict]) -> list[tuple[str, str]]:
    """Validate *new* against the schema and the corpus, then append; return (id, file) pairs."""
    existing = load_all()
    ids = {e["id"] for e in existing}
    pairs = {(e["url"], e["text"]) for e in existing}
    texts = {e["text"] for e in existing}
    placed: list[tuple[dict, str]] = []
    for entry in new:
        problems = validate(entry, need_id=False)
        if problems:
            raise SystemExit(f"invalid entry {entry.get('id', entry.get('url'))}: {problems}")
        if "id" not in entry:
            used = [int(i.rsplit("-", 1)[1]) for i in ids if i.rsplit("-", 1)[0] == entry["source"]]
            entry = {"id": f"{entry['source']}-{max(used, default=0) + 1:03d}", **entry}
        entry = {k: entry[k] for k in ("id", "url", "source", "release", "text", "expected")}
        if entry["id"] in ids:
            raise SystemExit(f"duplicate id {entry['id']}")
        if (entry["url"], entry["text"]) in pairs or entry["text"] in texts:
            raise SystemExit(f"duplicate text for {entry['id']} ({entry['url']})")
        ids.add(entry["id"])
        pairs.add((entry["url"], entry["text"]))
        texts.add(entry["text"])
        placed.append((entry, split_of(entry["url"], entry["text"])))
    CORPUS_DIR.mkdir(parents=True, exist_ok=True)
    for entry, half in placed:
        with open(CORPUS_DIR / half, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return [(e["id"], half) for e, half in placed]


def counts_table() -> str:
    """Return a Markdown table of the number of texts per source in each half."""
    per: dict[str, list[int]] = {source: [0, 0] for source in SOURCES}
    for index, name in enumerate(HALVES):
        path = CORPUS_DIR / name
        lines = path.read_text("utf-8").splitlines() if path.exists() else []
        for line in lines:
            per[json.loads(line)["source"]][index] += 1
    rows = ["| source | dev | heldout | total |", "| --- | ---: | ---: | ---: |"]
    rows += [f"| {s} | {d} | {h} | {d + h} |" for s, (d, h) in per.items()]
    dev, held = (sum(v[i] for v in per.values()) for i in (0, 1))
    rows.append(f"| **all** | {dev} | {held} | {dev + held} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: validate and append the entries read from stdin."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", action="store_true", help="print texts per source and half")
    if parser.parse_args(argv).counts:
        print(counts_table())
        return 0
    for ident, half in add(_read_stdin(sys.stdin.read())):
        print(f"{ident} -> {half}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
