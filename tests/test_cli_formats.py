"""The formats verb and the CLI's handling of bad input."""

from __future__ import annotations

import json

import pytest

from explorer.cli import main
from explorer.formats import all_formats

KEYS = {
    "name",
    "bits",
    "exponent_bits",
    "mantissa_bits",
    "bias",
    "max",
    "smallest_normal",
    "smallest_subnormal",
    "eps",
    "has_inf",
    "has_nan",
    "overflow",
    "kind",
    "bits_per_element",
}


def test_formats_json_lists_every_format(capsys):
    assert main(["formats", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"environment", "result"}
    rows = [r for r in data["result"] if r["kind"] == "element"]
    assert [r["name"] for r in rows] == [f.name for f in all_formats()]
    assert all(set(r) == KEYS and r["bits_per_element"] == r["bits"] for r in rows)
    assert data["result"][: len(rows)] == rows  # element formats first, then the block formats
    half = next(r for r in rows if r["name"] == "float16")
    assert half["max"] == 65504.0 and half["overflow"] == "inf"


def test_formats_table(capsys):
    assert main(["formats", "bf16", "e4m3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("name") and out[1].startswith("bfloat16")
    assert out[2].startswith("float8_e4m3fn")


def test_formats_by_name_or_dtype(capsys):
    assert main(["formats", "half", "--dtype", "bf16", "--dtype", "float16", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["result"]
    assert [r["name"] for r in rows] == ["float16", "bfloat16"]  # in order, repeats dropped


@pytest.mark.parametrize("argv", [["formats", "fp17"], ["formats", "--dtype", "fp17"]])
def test_bad_format_is_one_line_error(capsys, argv):
    with pytest.raises(SystemExit) as exc:  # refused by argparse, before any output
        main(argv)
    assert exc.value.code == 2
    captured = capsys.readouterr()
    last = captured.err.splitlines()[-1]
    assert last.startswith("precision-explorer formats: error: argument ")
    assert "did you mean 'fp16'" in last and "Traceback" not in captured.err
    assert captured.out == ""


def test_unknown_verb_exits_2():
    with pytest.raises(SystemExit) as exc:
        main(["frobnicate"])
    assert exc.value.code == 2


def test_formats_lists_the_block_formats_with_the_scale_share(capsys):
    """The block formats follow the element formats, with their bits per element including
    the block scale's share: 8 bits of E8M0 over 32 elements (MX), of E4M3 over 16 (NVFP4)."""
    assert main(["formats", "--json"]) == 0
    blocks = [r for r in json.loads(capsys.readouterr().out)["result"] if r["kind"] == "block"]
    shares = {r["name"]: r["bits_per_element"] for r in blocks}
    assert shares == {
        "mxfp8_e4m3": 8 + 8 / 32,
        "mxfp8_e5m2": 8 + 8 / 32,
        "mxfp6_e2m3": 6 + 8 / 32,
        "mxfp6_e3m2": 6 + 8 / 32,
        "mxfp4_e2m1": 4.25,
        "mxint8": 8 + 8 / 32,
        "nvfp4": 4.5,
    }
    assert main(["formats", "nvfp4", "MXFP4", "half"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].startswith("float16")
    assert "block formats" in out and "mxfp4_e2m1  float4_e2m1fn  32" in out
    assert "nvfp4       float4_e2m1fn  16          float8_e4m3fn   float32       4.5" in out
