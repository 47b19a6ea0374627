"""Shared test settings."""

from __future__ import annotations

import os

from explorer.analysis.probe import DEFAULT_PROBE_XLA_FLAGS

# TensorFlow's C++ log lines are noise in test output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# XLA compiles under the flags the app's probe workers use (LLVM optimisation off, elemental
# emitters; explorer.analysis.probe.DEFAULT_PROBE_XLA_FLAGS), in the test process and in every
# process it starts, so the tests check what the probes run.  `XLA_FLAGS= python -m pytest`
# runs them under the frameworks' own defaults.
os.environ.setdefault("XLA_FLAGS", DEFAULT_PROBE_XLA_FLAGS)
