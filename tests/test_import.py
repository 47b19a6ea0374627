"""`import explorer` stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("tensorflow", "torch", "keras", "matplotlib.pyplot", "ipywidgets", "jax")


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_import_explorer_imports_no_framework():
    code = (
        "import sys, explorer, explorer.ops, explorer.backends, explorer.runtime.sandbox, explorer.cli;"
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_python_m_explorer_runs():
    out = subprocess.run(
        [sys.executable, "-m", "explorer", "formats", "half", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert '"name": "float16"' in out.stdout
