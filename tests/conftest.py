"""Shared test settings."""

from __future__ import annotations

import os

# TensorFlow's C++ log lines are noise in test output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
