"""Fuzz the command line and the public API with bad input (hypothesis).

Two properties, each over a grammar that mixes valid and invalid values (unicode,
control characters, huge, negative and non-finite numbers, unknown names):

* **cli**: ``explorer.cli.main(argv)`` run in this process exits 0 or 2; a refusal is
  one ``precision-explorer...: error:`` line and nothing else (argparse's usage block
  too is left to ``--help``); nothing says "Traceback"; no control character reaches the terminal; no
  file named in ``argv`` changes (only pre-existing files are passed, and only to options
  that read).
* **api**: ``resolve``, ``get_op``, ``get_backend``, ``normalize_device``,
  ``TrainingConfig``, ``inspect_value``/``value_table``, ``number_line``,
  ``op_regions``, ``binary_map`` and ``accuracy`` (numpy/emulated backends, small
  sample counts) either return a value of the right kind or raise ValueError/TypeError.

Nothing here starts TensorFlow or a sandbox worker: verbs that would (``kernels``
probing, ``train``, ``lab``, ``app``) are only given ``--help`` or at least one value
that is refused before any work, ``kernels`` otherwise reads a snapshot (``--load``,
``--diff``), and guards fail the example if TensorFlow, the registry, a sweep or a
sandbox is reached anyway.

In CI the two tests run a fixed, derandomised number of examples (well under a minute in
all).  For a bigger run with a tally per category::

    python -m tests.test_fuzz --examples 2000      # or PX_FUZZ_EXAMPLES=2000 python -m tests.test_fuzz

(from the repository's root).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.abc
import importlib.util
import io
import json
import math
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.usefixtures("cache_dir")  # tests/conftest.py: a cache of the fuzz's own

#: examples per property in CI (the file runs in well under a minute on two cores)
CI_CLI_EXAMPLES = 400
CI_API_EXAMPLES = 800

# ------------------------------------------------------------------ value pools

VERBS = ("accuracy", "app", "bits", "formats", "kernels", "lab", "ranges", "train")
GOOD_DTYPES = (
    "float16",
    "half",
    "bf16",
    "bfloat16",
    "e4m3",
    "float8_e5m2",
    "fp4",
    "float32",
    "float64",
    "e8m0",
)
BAD_DTYPES = ("fp17", "", "int8", "half\x00", "\x1b]0;pwned\x07", "ハーフ", "x" * 300, "float 16 ")
GOOD_OPS = ("exp", "log", "tanh", "sqrt", "sin", "add", "mul", "div", "pow", "EXP", " exp ")
OTHER_OPS = ("cholesky", "matmul", "Cholesky", "nosuch", "", "bad op!", "\u202eexp", "exp\x1b[2J")
#: backends safe to run here (never TensorFlow: its probes are slow and start a framework)
SAFE_BACKENDS = ("numpy", "emulated", "np", "ml_dtypes", "NumPy", " emulated ", "torch")
BAD_BACKENDS = ("tensorfloe", "torchh", "", "numpy:0", "\x1b[31mnumpy", "ｎｕｍｐｙ")
DEVICES = ("CPU", "cpu", "GPU", "/gpu", "device:CPU", "gpu:7", "GPU:0", "TPU", "", "c\x1bpu")
GROUPS = ("unary", "linalg", "nn", "fft", "nosuch", "", "Unary", "\x1b[1m")
MODES = ("registry", "eager", "xla", "nosuch", "")
#: numbers as typed: valid small ones, and every way of being wrong
NUMBERS = (
    "0", "1", "2", "3", "17", "100", "1000", "-1", "-5", "nan", "NaN", "inf", "-inf", "1e3", "1.5",
    "99999999999", "9" * 5000, "١٢", "0x10", "", " 7 ", "1_000", "+3", "1e-400", "true",
)  # fmt: skip
VALUES = (
    "0.1", "-1.5e-5", "65519", "65520", "inf", "-inf", "nan", "-0", "1e-5000", "1e5000", "1e-99999999",
    "0x10", "１２", "1_000", "", "abc", "1e", "0." + "1" * 900, "9" * 2000,
)  # fmt: skip
TENSORFLOW_NAMES = {"tf", "tensorflow"}

text = st.text(max_size=12)


def mixed(good: tuple[str, ...], bad: tuple[str, ...]) -> st.SearchStrategy[str]:
    """Mostly valid values (so that runs get past the checks), else a bad one or any text."""
    valid = st.sampled_from(good)
    return st.one_of(valid, valid, valid, st.sampled_from(bad), text)


small_numbers = st.sampled_from(("2", "3", "17", "100", "1000"))
numbers = st.one_of(
    small_numbers,
    small_numbers,
    small_numbers,
    st.sampled_from(NUMBERS),
    st.integers(-10, 5000).map(str),
    st.integers(10**7 + 1, 10**15).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    text,
)
dtypes = mixed(GOOD_DTYPES, BAD_DTYPES)
ops = mixed(GOOD_OPS, OTHER_OPS)
devices = mixed(DEVICES[:5], DEVICES[5:])
safe_backends = mixed(SAFE_BACKENDS, BAD_BACKENDS).filter(lambda s: s.strip().lower() not in TENSORFLOW_NAMES)
any_backends = st.one_of(safe_backends, st.sampled_from(("tensorflow", "tf")))


def _is_int(textual: str, lo: float = -math.inf, hi: float = math.inf) -> bool:
    """True when ``int(textual)`` reads it and it lies in [lo, hi]."""
    try:
        return lo <= int(textual) <= hi
    except ValueError:
        return False


def _not_a(check: Callable[[str], Any]) -> Callable[[str], bool]:
    """A filter: True for strings that ``check`` refuses (with ValueError/TypeError)."""

    def refused(value: str) -> bool:
        try:
            check(value)
        except (ValueError, TypeError):
            return True
        return False

    return refused


def _resolve(name: str) -> Any:
    from explorer.formats import resolve

    return resolve(name)


def _device(name: str) -> Any:
    from explorer.backends import normalize_device

    return normalize_device(name)


def _group(name: str) -> None:
    from explorer.ops import GROUPS as valid

    if name not in valid:
        raise ValueError(name)


def _policy(name: str) -> Any:
    from explorer.training import policy_spec

    return policy_spec(name)


def _option(name: str, values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    return values.map(lambda v: [name, v])


def _options(*choices: st.SearchStrategy[list[str]], max_size: int = 5) -> st.SearchStrategy[list[str]]:
    """Up to ``max_size`` options in any order, flattened."""
    return st.lists(st.one_of(*choices), max_size=max_size).map(lambda groups: [a for g in groups for a in g])


def _flag(name: str) -> st.SearchStrategy[list[str]]:
    return st.just([name])


# ------------------------------------------------------------------ the argv grammar


@dataclass
class Files:
    """Pre-existing files passed to options that read, with their sha256 before the run."""

    directory: Path
    snapshot: Path
    garbage: Path
    not_snapshot: Path
    missing: Path
    digests: dict[Path, str] = field(default_factory=dict)

    def readable(self) -> list[str]:
        """Paths for ``--load``/``--diff`` (the missing one and the directory included)."""
        return [
            str(p) for p in (self.snapshot, self.garbage, self.not_snapshot, self.missing, self.directory)
        ]

    def changed(self) -> list[str]:
        """Files whose content changed, or that appeared, since :func:`make_files`."""
        now = {p: _sha256(p) for p in self.directory.iterdir()}
        return sorted(str(p) for p in set(now) | set(self.digests) if now.get(p) != self.digests.get(p))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_files(directory: Path) -> Files:
    """A kernels snapshot (its texts holding escape sequences), garbage, and a JSON non-snapshot."""
    directory.mkdir(parents=True, exist_ok=True)
    row = {
        "backend": "numpy",
        "op": "exp",
        "raw_op": "Exp",
        "dtype": "float16",
        "device": "CPU",
        "mode": "eager",
        "status": "ok",
        "error": "",
        "explanation": "runs\x1b]0;pwned\x07 here",
        "workaround": "",
    }
    rows = [
        row,
        {**row, "op": "cholesky", "raw_op": "Cholesky", "status": "unsupported_dtype", "error": "no\x1b[2J"},
    ]
    snapshot = {"kind": "precision-explorer/kernels", "version": 1, "environment": {"cpu": "x"}, "rows": rows}
    files = Files(
        directory,
        directory / "snapshot.json",
        directory / "garbage.bin",
        directory / "other.json",
        directory / "missing.json",
    )
    files.snapshot.write_text(json.dumps(snapshot))
    files.garbage.write_bytes(b"\x00\xff\x1b[2J not json")
    files.not_snapshot.write_text(json.dumps({"kind": "something else"}))
    files.digests = {p: _sha256(p) for p in directory.iterdir()}
    return files


def argv_strategy(files: Files) -> st.SearchStrategy[list[str]]:
    """argv for every verb; the slow ones (probing, training, servers) always hold a refused value."""
    formats = st.tuples(st.lists(dtypes, max_size=3), _options(_flag("--json"), max_size=1)).map(
        lambda t: ["formats", *t[0], *t[1]]
    )
    bits = st.tuples(
        st.one_of(st.sampled_from(VALUES), numbers),
        dtypes,
        _options(_option("--dtype", dtypes), _flag("--table"), _flag("--json"), _flag("--bogus"), max_size=2),
    ).map(lambda t: ["bits", t[0], "--dtype", t[1], *t[2]])
    bits_table = _options(_option("--dtype", dtypes), _flag("--json"), max_size=2).map(
        lambda o: ["bits", "--table", *o]
    )
    ranges = st.tuples(
        dtypes,
        _options(
            _option("--op", ops),
            _option("--backend", safe_backends),
            _option("--samples", numbers),
            _option("--device", devices),
            _flag("--json"),
            max_size=4,
        ),
    ).map(lambda t: ["ranges", "--dtype", t[0], *t[1]])
    accuracy = st.tuples(
        ops,
        dtypes,
        st.lists(safe_backends, min_size=1, max_size=2),
        _options(
            _option("--disagreements", numbers), _option("--device", devices), _flag("--json"), max_size=3
        ),
    ).map(
        lambda t: [
            "accuracy",
            "--op",
            t[0],
            "--dtype",
            t[1],
            *[a for b in t[2] for a in ("--backend", b)],
            *t[3],
        ]
    )
    # the same verbs with valid values only, so that the analyses behind them are reached too
    good = st.sampled_from
    ranges_valid = st.tuples(
        good(GOOD_DTYPES),
        _options(
            _option("--op", good(GOOD_OPS)),
            _option("--backend", good(SAFE_BACKENDS)),
            _option("--samples", small_numbers),
            _option("--device", good(DEVICES[:5])),
            _flag("--json"),
            max_size=4,
        ),
    ).map(lambda t: ["ranges", "--dtype", t[0], *t[1]])
    accuracy_valid = st.tuples(
        good(GOOD_OPS),
        good(GOOD_DTYPES),
        st.lists(good(SAFE_BACKENDS), min_size=1, max_size=2),
        _options(_option("--disagreements", small_numbers), _flag("--json"), max_size=2),
    ).map(
        lambda t: [
            "accuracy",
            "--op",
            t[0],
            "--dtype",
            t[1],
            *[a for b in t[2] for a in ("--backend", b)],
            *t[3],
        ]
    )
    kernel_filters = _options(
        _option("--op", ops),
        _option("--dtype", dtypes),
        _option("--device", devices),
        _option("--backend", any_backends),
        _option("--mode", st.sampled_from(MODES)),
        _option("--group", st.one_of(st.sampled_from(GROUPS), text)),
        _option("--timeout", numbers),
        _flag("--json"),
        _flag("--full"),
        _flag("--no-cache"),
        max_size=4,
    )
    readable = st.sampled_from(files.readable())
    kernels_load = st.tuples(readable, kernel_filters).map(lambda t: ["kernels", "--load", t[0], *t[1]])
    kernels_diff = st.tuples(
        st.sampled_from([str(files.snapshot)] * 2 + files.readable()), _options(_flag("--json"), max_size=1)
    ).map(lambda t: ["kernels", "--diff", str(files.snapshot), t[0], *t[1]])
    refused_before_probing = st.one_of(
        _option("--timeout", numbers.filter(_not_a(_positive_timeout))),
        _option("--group", st.one_of(st.sampled_from(GROUPS), text).filter(_not_a(_group))),
        _option("--device", devices.filter(_not_a(_device))),
        _option("--dtype", dtypes.filter(_not_a(_resolve))),
        _option("--backend", st.sampled_from(BAD_BACKENDS)),
        _option("--op", st.sampled_from(("bad op!", "", "exp\x1b[2J", "\u202eexp", "a-b"))),
        _option("--mode", st.sampled_from(("nosuch", "", "EAGER"))),
        st.just(["--bogus"]),
    )
    # the refused value goes last: a later valid value of a single-valued option would win
    kernels_probe = st.tuples(kernel_filters, refused_before_probing).map(lambda t: ["kernels", *t[0], *t[1]])
    kernels_help = st.just(["kernels", "--help"])
    train = st.tuples(
        _options(
            _option("--epochs", numbers),
            _option("--seed", numbers),
            _option("--policy", st.sampled_from(("float32", "mixed_float16", "bf16"))),
            _flag("--json"),
            max_size=3,
        ),
        st.one_of(
            _option("--epochs", numbers.filter(lambda s: not _is_int(s, 1, 1000))),
            _option("--seed", numbers.filter(lambda s: not _is_int(s, 0, 2**31 - 1))),
            _option(
                "--policy", st.one_of(st.sampled_from(("fp9", "", "mixed")), text).filter(_not_a(_policy))
            ),
            _option(
                "--model",
                st.one_of(st.sampled_from(("rnn", "MLP", "")), text).filter(
                    lambda s: s not in ("mlp", "cnn")
                ),
            ),
            _option(
                "--scenario",
                st.one_of(st.just("overflow"), text).filter(lambda s: s not in ("default", "underflow")),
            ),
            st.just(["--bogus"]),
            st.just(["--help"]),
        ),
    ).map(lambda t: ["train", *t[0], *t[1]])
    lab = st.tuples(
        _options(_flag("--dry-run"), _flag("--no-browser"), max_size=2),
        st.one_of(
            _option("--port", numbers.filter(lambda s: not _is_int(s, 1, 65535))),
            st.just(["--bogus"]),
            st.just(["--help"]),
        ),
    ).map(lambda t: ["lab", *t[0], *t[1]])
    app = st.tuples(
        _options(_flag("--dry-run"), _flag("--no-browser"), _flag("--preheat"), max_size=2),
        st.one_of(
            _option("--port", numbers.filter(lambda s: not _is_int(s))),
            _option("--cull-idle-timeout", numbers.filter(lambda s: not _is_int(s))),
            st.just(["--bogus"]),
            st.just(["--help"]),
        ),
    ).map(lambda t: ["app", *t[0], *t[1]])
    top = st.one_of(
        st.just([]),
        st.just(["--help"]),
        st.lists(text, min_size=1, max_size=3).filter(lambda a: not set(a) & set(VERBS)),
        st.sampled_from(VERBS).map(lambda v: [v, "--help"]),
    )
    return st.one_of(
        formats, bits, bits_table, ranges, ranges_valid, accuracy, accuracy_valid,
        kernels_load, kernels_diff, kernels_probe, kernels_help, train, lab, app, top,
    )  # fmt: skip


def _positive_timeout(value: str) -> float:
    from explorer.cli import positive_float

    try:
        return positive_float(3600.0)(value)
    except argparse.ArgumentTypeError as exc:
        raise ValueError(str(exc)) from None


# ------------------------------------------------------------------ guards and the tally


class ReachedWork(BaseException):
    """A guarded place was reached: the grammar let slow work through (a fuzz-test bug)."""


class _BlockTensorFlow(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """An import hook: importing TensorFlow or Keras raises ReachedWork (when not imported yet)."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name.split(".")[0] in ("tensorflow", "keras"):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        raise ReachedWork(f"import {module.__name__}")


@contextlib.contextmanager
def guards() -> Iterator[None]:
    """Make TensorFlow, the registry, an availability sweep and the sandbox raise ReachedWork."""
    import explorer.backends.tensorflow_backend as tf_backend
    import explorer.queries.availability as availability
    import explorer.runtime.registry as registry
    import explorer.runtime.sandbox as sandbox

    def refuse(what: str) -> Callable[..., Any]:
        def raise_it(*args: Any, **kwargs: Any) -> Any:
            raise ReachedWork(what)

        return raise_it

    saved = [
        (availability, "availability"),
        (registry, "get_registry"),
        (tf_backend, "import_tensorflow"),
        (sandbox, "default_sandbox"),
        (sandbox, "Sandbox"),  # what a slotted sandbox (the app's probes, pasted errors) starts
    ]
    originals = [(module, name, getattr(module, name)) for module, name in saved]
    hook = _BlockTensorFlow()
    sys.meta_path.insert(0, hook)
    try:
        for module, name, _ in originals:
            setattr(module, name, refuse(f"{module.__name__}.{name}"))
        yield
    finally:
        sys.meta_path.remove(hook)
        for module, name, original in originals:
            setattr(module, name, original)


@dataclass
class Tally:
    """Outcomes per category, and the first few examples of each kind of failure."""

    counts: dict[str, Counter[str]] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, category: str, outcome: str, example: str = "") -> None:
        self.counts.setdefault(category, Counter())["tried"] += 1
        self.counts[category][outcome] += 1
        if outcome in ("traceback", "wrong result", "file changed"):
            found = self.examples.setdefault(f"{category}: {outcome}", [])
            if len(found) < 5:
                found.append(example)

    def report(self) -> str:
        columns = (
            "tried", "exit 0", "exit 1 (no backend ran)", "ok", "clean error (2)", "clean error",
            "traceback", "wrong result", "file changed",
        )  # fmt: skip
        lines = []
        for category, counts in self.counts.items():
            always = ("tried", "traceback", "wrong result", "file changed")
            shown = ", ".join(f"{c}: {counts[c]}" for c in columns if c in counts or c in always)
            lines.append(f"{category}: {shown}")
        for kind, found in self.examples.items():
            lines.append(f"  {kind}:")
            lines.extend(f"    {e}" for e in found)
        return "\n".join(lines)


_CONTROL = {chr(c) for c in range(32) if chr(c) not in "\n\t"} | {chr(c) for c in range(0x7F, 0xA0)}


def _shape_problem(code: int, err: str) -> str | None:
    """Why stderr of a refusal is not one clean error line (None when it is)."""
    if code != 2:
        return None
    lines = err.splitlines()
    if not lines:
        return "no error message"
    last = lines[-1]
    if not (last.startswith("precision-explorer") and ": error: " in last):
        return f"last line is not an error line: {last[:80]!r}"
    if len(lines) > 1:
        return f"{len(lines)} lines, not one"
    return None


def check_cli(argv: list[str], files: Files, tally: Tally | None) -> None:
    """Run ``main(argv)``; record the outcome in ``tally``, or assert it (``tally`` None)."""
    from explorer.cli import main

    out, err = io.StringIO(), io.StringIO()
    escaped: BaseException | None = None
    code: Any = None
    with guards(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        except (Exception, ReachedWork) as exc:
            escaped = exc
    stdout, stderr = out.getvalue(), err.getvalue()
    changed = files.changed()
    if escaped is not None or "Traceback" in stderr:
        outcome, why = "traceback", f"{type(escaped).__name__}: {escaped}" if escaped else stderr[-300:]
    elif changed:
        outcome, why = "file changed", ", ".join(changed)
    elif code not in (0, 2) and not (code == 1 and argv[:1] in (["ranges"], ["accuracy"])):
        # ranges and accuracy exit 1 when no backend could run (e.g. numpy has no float8)
        outcome, why = "wrong result", f"exit status {code!r}"
    elif (problem := _shape_problem(code, stderr)) is not None:
        outcome, why = "wrong result", problem
    elif _CONTROL & set(stdout + stderr):
        outcome, why = "wrong result", "a control character reached the terminal"
    else:
        outcome, why = {0: "exit 0", 1: "exit 1 (no backend ran)", 2: "clean error (2)"}[code], ""
    if tally is not None:
        tally.add("cli", outcome, f"{argv!r} -> {why}"[:400])
        if changed:  # start the next example from the original files
            make_files(files.directory)
        return
    assert outcome not in ("traceback", "wrong result", "file changed"), (
        f"{argv!r}: {outcome}: {why}\n{stderr[-2000:]}"
    )


# ------------------------------------------------------------------ the API grammar

any_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(),
    text,
    st.binary(max_size=6),
    st.lists(st.integers(-3, 3), max_size=3),
    st.sampled_from(
        [np.float16, np.float32, np.int8, float, int, object, np.dtype("float16"), np.dtype("int32")]
    ),
)
api_dtypes = st.one_of(dtypes, any_value)
api_ops = st.one_of(ops, any_value)
api_devices = st.one_of(devices, any_value)
#: backends for sweeps: only ones that run here, bad names, or not names at all
sweep_backends = st.one_of(
    safe_backends,
    any_value.filter(lambda v: not (isinstance(v, str) and v.strip().lower() in TENSORFLOW_NAMES)),
)


def _not_large(lo: int, hi: int) -> Callable[[Any], bool]:
    """A filter: False for integers in [lo, hi] (valid but slow sample counts or grid sizes)."""
    return lambda v: isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi


samples = st.one_of(
    st.integers(-3, 2000), st.integers(10**7 + 1, 10**12), any_value.filter(_not_large(2001, 10**7))
)
points = st.one_of(st.integers(-3, 65), st.integers(4098, 10**9), any_value.filter(_not_large(66, 4097)))
#: known bugs outside this fuzz's reach, left out so CI stays green (reported in issue 15):
#: inspect_value(int beyond float range) raises OverflowError; a decimal string with a huge
#: negative exponent ("1e-99999999") builds a 10**99999999 Fraction (minutes of work)
bits_values = st.one_of(
    st.sampled_from([v for v in VALUES if v != "1e-99999999"]),
    st.floats(),
    st.integers(-(10**300), 10**300),
    st.booleans(),
    st.none(),
    text.filter(lambda s: "e" not in s.lower()),
)
training_fields = st.dictionaries(
    st.sampled_from(
        [
            "policy", "model", "scenario", "epochs", "batch_size", "learning_rate", "seed", "initial_scale",
            "dynamic_growth_steps", "histogram_steps", "max_train_samples", "record_steps",
        ]
    ),
    st.one_of(
        any_value,
        st.integers(-5, 5000),
        st.sampled_from(["float32", "bf16", "mixed_float16", "mlp", "cnn", "default", "underflow"]),
        st.tuples(st.integers(-5, 5)),
        st.sampled_from([np.int64(3), np.float32(0.5), np.bool_(True), math.inf, math.nan, -0.0, 2.0**200]),
    ),
    max_size=5,
)  # fmt: skip


def _call(kind: str, args: tuple[Any, ...]) -> Any:
    """Call the API function ``kind`` with ``args``; returns its result."""
    from explorer.analysis import bits
    from explorer.backends import get_backend, normalize_device
    from explorer.formats import resolve
    from explorer.ops import get_op
    from explorer.queries import accuracy, ranges
    from explorer.training import TrainingConfig

    if kind == "TrainingConfig":
        return TrainingConfig(**args[0]).validated()
    functions: dict[str, Callable[..., Any]] = {
        "resolve": resolve,
        "get_op": get_op,
        "get_backend": get_backend,
        "normalize_device": normalize_device,
        "inspect_value": bits.inspect_value,
        "value_table": bits.value_table,
        "number_line": ranges.number_line,
        "op_regions": ranges.op_regions,
        "binary_map": ranges.binary_map,
        "accuracy": accuracy.accuracy,
    }
    return functions[kind](*args)


def _wrong(kind: str, result: Any) -> str | None:
    """Why ``result`` is not what ``kind`` should return (None when it is)."""
    from explorer.analysis.bits import BitInfo
    from explorer.backends import DEVICE_TYPES, Backend
    from explorer.formats import Format
    from explorer.ops import Op
    from explorer.queries.accuracy import AccuracyResult
    from explorer.queries.ranges import BinaryMap, NumberLine, OpRegions
    from explorer.training import POLICY_NAMES, TrainingConfig

    expected: dict[str, Any] = {
        "resolve": Format,
        "get_op": Op,
        "get_backend": Backend,
        "normalize_device": str,
        "inspect_value": BitInfo,
        "number_line": NumberLine,
        "op_regions": OpRegions,
        "binary_map": BinaryMap,
        "accuracy": AccuracyResult,
        "TrainingConfig": TrainingConfig,
    }
    if kind in expected and not isinstance(result, expected[kind]):
        return f"returned {type(result).__name__}"
    if kind == "normalize_device" and result not in DEVICE_TYPES:
        return f"device {result!r}"
    if kind == "TrainingConfig":
        c = result
        ints = [c.epochs, c.batch_size, c.seed, c.dynamic_growth_steps, *c.histogram_steps]
        if c.max_train_samples is not None:
            ints.append(c.max_train_samples)
        if c.policy not in POLICY_NAMES or any(type(v) is not int for v in ints):
            return f"unchecked field in {c!r}"
        if not (
            isinstance(c.initial_scale, float) and math.isfinite(c.initial_scale) and c.initial_scale > 0
        ):
            return f"initial_scale {c.initial_scale!r}"
        if c.learning_rate is not None and not (math.isfinite(c.learning_rate) and c.learning_rate > 0):
            return f"learning_rate {c.learning_rate!r}"
    return None


def api_strategy() -> st.SearchStrategy[tuple[str, tuple[Any, ...]]]:
    """(function name, arguments) for every API entry point."""

    def call(kind: str, *args: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[str, tuple[Any, ...]]]:
        return st.tuples(*args).map(lambda a: (kind, a))

    good = st.sampled_from
    good_backend = good(SAFE_BACKENDS)
    small = st.integers(2, 300)
    valid_fields = st.fixed_dictionaries(
        {},
        optional={
            "policy": good(("float32", "bf16", "mixed_float16", "float16")),
            "model": good(("mlp", "cnn")),
            "epochs": st.integers(1, 20),
            "batch_size": st.integers(1, 256),
            "learning_rate": st.floats(1e-6, 1.0),
            "seed": st.integers(0, 2**31 - 1),
            "max_train_samples": st.integers(256, 2000),
        },
    )
    return st.one_of(
        # mostly valid calls, so that the analyses are reached
        call("inspect_value", good(VALUES[:10]), good(GOOD_DTYPES)),
        call("op_regions", good(GOOD_OPS), good(GOOD_DTYPES), good_backend, small, good(DEVICES[:5])),
        call(
            "binary_map",
            good(GOOD_OPS),
            good(GOOD_DTYPES),
            good_backend,
            st.integers(3, 40),
            good(DEVICES[:5]),
        ),
        call(
            "accuracy",
            good(GOOD_OPS),
            good(GOOD_DTYPES),
            good_backend,
            small,
            st.integers(3, 40),
            good(DEVICES[:5]),
        ),
        call("TrainingConfig", valid_fields),
        # anything
        call("resolve", api_dtypes),
        call("get_op", api_ops),
        call("get_backend", st.one_of(any_backends, any_value)),
        call("normalize_device", api_devices),
        call("TrainingConfig", training_fields),
        call("inspect_value", bits_values, api_dtypes),
        call("value_table", api_dtypes),
        call("number_line", api_dtypes),
        call("op_regions", api_ops, api_dtypes, sweep_backends, samples, api_devices),
        call("binary_map", api_ops, api_dtypes, sweep_backends, points, api_devices),
        call(
            "accuracy",
            api_ops,
            api_dtypes,
            st.one_of(st.lists(sweep_backends, max_size=2).map(tuple), sweep_backends),
            samples,
            points,
            api_devices,
        ),
    )


def check_api(kind: str, args: tuple[Any, ...], tally: Tally | None) -> None:
    """Call one API entry point; record (or assert) that it returns the right kind or refuses cleanly."""
    problem: str | None = None
    with guards(), np.errstate(all="ignore"):
        try:
            result = _call(kind, args)
        except (ValueError, TypeError):
            outcome = "clean error"
        except (Exception, ReachedWork) as exc:
            outcome, problem = "traceback", f"{type(exc).__name__}: {exc}"
        else:
            problem = _wrong(kind, result)
            outcome = "ok" if problem is None else "wrong result"
    if tally is not None:
        tally.add("api", outcome, f"{kind}{args!r} -> {problem}"[:400])
        return
    assert problem is None, f"{kind}{args!r}: {outcome}: {problem}"


# ------------------------------------------------------------------ pytest


@pytest.fixture(scope="module")
def files() -> Iterator[Files]:
    with tempfile.TemporaryDirectory(prefix="px-fuzz-") as tmp:
        yield make_files(Path(tmp) / "inputs")


def test_the_snapshot_of_the_grammar_loads(files: Files, capsys: Any) -> None:
    """The fuzz's snapshot is a valid one (else ``--load`` would only ever be refused)."""
    from explorer.cli import main

    assert main(["kernels", "--load", str(files.snapshot), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["result"]) == 2


def test_inspect_value_of_numbers_beyond_float64() -> None:
    """An int beyond float64 rounds like its float64 value (an infinity), with an infinite error;
    an exponent too large to compute exactly is refused at once (it used to hang)."""
    from explorer.analysis.bits import inspect_value

    big = inspect_value(10**400, "float16")
    assert big.value == math.inf and big.rounding_error == math.inf
    assert inspect_value(-(10**400), "float8_e4m3fn").kind == "nan"
    assert inspect_value("1e400", "float16").rounding_error == math.inf
    assert inspect_value("inf", "float16").rounding_error == 0.0
    with pytest.raises(ValueError, match="exponent"):
        inspect_value("1e-99999999", "float16")


def _ci_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )


@pytest.mark.slow
def test_fuzz_cli(files: Files) -> None:
    @_ci_settings(CI_CLI_EXAMPLES)
    @given(argv_strategy(files))
    def property_(argv: list[str]) -> None:
        check_cli(argv, files, None)

    had_tensorflow = "tensorflow" in sys.modules  # imported by an earlier test, maybe
    property_()
    assert had_tensorflow or "tensorflow" not in sys.modules


@pytest.mark.slow
def test_fuzz_api() -> None:
    @_ci_settings(CI_API_EXAMPLES)
    @given(api_strategy())
    def property_(call: tuple[str, tuple[Any, ...]]) -> None:
        check_api(*call, None)

    had_tensorflow = "tensorflow" in sys.modules
    property_()
    assert had_tensorflow or "tensorflow" not in sys.modules


# ------------------------------------------------------------------ script


def run_script(examples: int) -> Tally:
    """Run both properties for ``examples`` examples each (random, not derandomised) and tally them."""
    tally = Tally()
    loose = settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    with tempfile.TemporaryDirectory(prefix="px-fuzz-") as tmp:
        os.environ["PX_CACHE_DIR"] = str(Path(tmp) / "cache")
        files = make_files(Path(tmp) / "inputs")

        @loose
        @given(argv_strategy(files))
        def cli(argv: list[str]) -> None:
            check_cli(argv, files, tally)

        @loose
        @given(api_strategy())
        def api(call: tuple[str, tuple[Any, ...]]) -> None:
            check_api(*call, tally)

        cli()
        api()
    if "tensorflow" in sys.modules:
        tally.add("cli", "wrong result", "TensorFlow was imported")
    return tally


def _main() -> int:
    parser = argparse.ArgumentParser(description="Fuzz the CLI and the API; print a tally per category.")
    parser.add_argument(
        "--examples",
        type=int,
        default=int(os.environ.get("PX_FUZZ_EXAMPLES", "1000")),
        help="examples per category (default $PX_FUZZ_EXAMPLES or 1000)",
    )
    args = parser.parse_args()
    import warnings

    warnings.simplefilter("error")  # as in the tests (pyproject's filterwarnings)
    tally = run_script(args.examples)
    print(tally.report())
    bad = sum(c["traceback"] + c["wrong result"] + c["file changed"] for c in tally.counts.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(_main())
