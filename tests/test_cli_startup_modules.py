"""The command line's quick answers load nothing heavy: ``explain --no-run`` on a short text and
the refusal of a hostile ``.keras`` or ``.npy`` file, each in a fresh interpreter, leave no
framework, no pandas/SciPy/matplotlib/ipywidgets and no ml_dtypes (whose extension alone takes
~0.6 CPU s to load) in ``sys.modules``.  Asserted on modules, not on time; the times are
``benchmarks/cli_latency.py``'s."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: modules none of these answers needs
HEAVY = (
    "tensorflow",
    "torch",
    "jax",
    "keras",
    "pandas",
    "scipy",
    "matplotlib",
    "ipywidgets",
    "ml_dtypes",
    "h5py",
)
_PROBE = """
import json, sys
from explorer.cli import main
status = main(sys.argv[1:])
print("@@" + json.dumps([status, sorted(m for m in {heavy!r} if m in sys.modules)]))
"""


def _run(argv: list[str], stdin: str = "") -> tuple[int, list[str], str, str]:
    """``precision-explorer ARGV`` in a fresh interpreter: exit status, the heavy modules loaded,
    stdout (less the probe's line) and stderr."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(heavy=HEAVY), *argv],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    probe = [line for line in lines if line.startswith("@@")]
    assert probe, done.stderr
    status, loaded = json.loads(probe[-1][2:])
    return status, loaded, "\n".join(line for line in lines if not line.startswith("@@")), done.stderr


def test_explain_no_run_loads_nothing_heavy():
    status, loaded, out, _ = _run(
        ["explain", "--no-run", "-"], "RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'\n"
    )
    assert status == 0
    assert loaded == []
    # the reading is there: 'Half' is PyTorch's name of float16, the kernel name says CPU
    fields = dict(line.split(None, 1) for line in out.splitlines()[:8] if line and not line[0].isspace())
    assert fields["framework"].startswith("torch")
    assert fields["dtype"].startswith("float16")
    assert fields["device"].startswith("CPU")


def test_hostile_keras_refusal_loads_nothing_heavy(tmp_path):
    bad = tmp_path / "bad.keras"
    with zipfile.ZipFile(bad, "w") as archive:  # a zip without the config.json every .keras holds
        archive.writestr("metadata.json", "{}")
    status, loaded, _, err = _run(["model", "--file", str(bad)])
    assert status == 2
    assert "holds no config.json" in err and len(err.strip().splitlines()) == 1
    assert loaded == []


def test_hostile_npy_refusal_loads_nothing_heavy(tmp_path):
    bad = tmp_path / "bad.npy"
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }"
    header = header.ljust(117) + b"\n"  # magic (6) + version (2) + length (2) + 118 = 128 bytes
    bad.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
    status, loaded, _, err = _run(["blocks", "--tensor", str(bad)])
    assert status == 2
    assert "1,000,000,000,000 elements" in err and len(err.strip().splitlines()) == 1
    assert loaded == []


@pytest.mark.parametrize("name", ["float8_e5m3fnu", "float4_e2m1fn", "bfloat16", "tf32", "float16"])
def test_format_names_without_ml_dtypes_match_the_module(name):
    """FORMAT_NAMES is read from ml_dtypes' version, not its module: the same names as ``hasattr``."""
    import ml_dtypes
    import numpy as np

    from explorer.formats import FORMAT_NAMES

    have = name == "tf32" or hasattr(np, name) or hasattr(ml_dtypes, name)
    assert (name in FORMAT_NAMES) == have
