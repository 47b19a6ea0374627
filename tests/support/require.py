"""One rule for what a test needs from the machine: skip on a developer's machine, fail in CI.

A framework (TensorFlow, PyTorch, JAX), the browser (Chromium, Playwright, axe-core) or a tool
(configurable-http-proxy, JupyterHub) that is missing skips the tests that need it with one
line saying what is missing and how to get it; in CI the same test fails with that line, so a
broken CI machine cannot pass by skipping.  CI is ``CI=true`` (what CI runners set) or
``PX_REQUIRE_BROWSER=1`` (what ``.ci/run`` sets).

>>> require(True, "nothing")  # present: nothing happens
>>> in_ci({"CI": "true"}), in_ci({"PX_REQUIRE_BROWSER": "1"}), in_ci({})
(True, True, False)
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Mapping

import pytest

#: how to install what the tests may need, by import name
INSTALL = {
    "tensorflow": "pip install tensorflow",
    "torch": 'pip install -e ".[torch]"',
    "expecttest": 'pip install -e ".[torch]" (PyTorch\'s test suite imports it)',
    "jax": 'pip install -e ".[jax]"',
    "jaxlib": 'pip install -e ".[jax]"',
    "onnxruntime": 'pip install -e ".[onnx]"',
    "onnx": 'pip install -e ".[onnx]"',
    "playwright": "pip install playwright (never `playwright install`: the tests use Debian's chromium)",
    "jupyterhub": "pip install jupyterhub jupyterhub-idle-culler",
}


def in_ci(environ: Mapping[str, str] | None = None) -> bool:
    """Whether missing requirements fail (CI) rather than skip: ``CI=true`` or ``PX_REQUIRE_BROWSER=1``."""
    env = os.environ if environ is None else environ
    return env.get("CI", "").strip().lower() == "true" or env.get("PX_REQUIRE_BROWSER") == "1"


def require(condition: object, what: str) -> None:
    """Nothing when ``condition`` holds; else skip the test with ``what`` (one line: what is
    missing and how to get it), or fail it with that line in CI (:func:`in_ci`)."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"required in CI (CI=true or PX_REQUIRE_BROWSER=1): {what}", pytrace=False)
    pytest.skip(what)


def has_module(name: str) -> bool:
    """Whether ``name`` can be imported here (without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def require_module(name: str, install: str | None = None) -> None:
    """:func:`require` that ``name`` is importable; the reason says how to install it."""
    require(
        has_module(name), f"{name} is not installed ({install or INSTALL.get(name, f'pip install {name}')})"
    )


def require_command(name: str, install: str) -> str:
    """:func:`require` that the command ``name`` is on PATH; returns its path."""
    found = shutil.which(name)
    require(found, f"{name} is not on PATH ({install})")
    assert found is not None
    return found
