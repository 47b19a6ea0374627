"""Shared test settings."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from explorer.runtime.probe import DEFAULT_PROBE_XLA_FLAGS

# TensorFlow's C++ log lines are noise in test output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# XLA compiles under the flags the app's probe workers use (LLVM optimisation off, elemental
# emitters; explorer.runtime.probe.DEFAULT_PROBE_XLA_FLAGS), in the test process and in every
# process it starts, so the tests check what the probes run.  `XLA_FLAGS= python -m pytest`
# runs them under the frameworks' own defaults.
os.environ.setdefault("XLA_FLAGS", DEFAULT_PROBE_XLA_FLAGS)


@pytest.fixture(autouse=True, scope="module")
def _app_probe_workers_stopped_after_each_module() -> Iterator[None]:
    """The app's probe sandbox (Probe now, pasted errors' workarounds) holds one of the machine's
    worker slots while its workers live; stopping them after each module leaves the slots to the
    processes the next modules start (Voila kernels, CLI runs), as a visitor's idle release would."""
    yield
    from explorer.runtime.probe import app_probe_sandbox

    app_probe_sandbox().close()
