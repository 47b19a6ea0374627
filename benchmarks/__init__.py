"""Benchmarks: each prints figures measured on the machine at hand (results in benchmarks/results/).

Those that use the tests' helpers (:mod:`tests.support`: Chromium, Voila servers) run as modules
from the repository root, ``python -m benchmarks.bench_app_browser``; so does the runner,
``python -m benchmarks.run [name]``.
"""
