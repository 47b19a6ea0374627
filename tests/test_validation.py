"""Bad input is refused before any work: exit status 2 and one line on stderr (issue 15, item 9).

Each case is one a tester found: a traceback, a huge allocation, a value accepted
silently, or an error only after a long sweep.  ``run_cli`` accepts both shapes of a
refusal: argparse's (``SystemExit(2)``, one error line) and a verb's
(``main`` returns 2 after one ``precision-explorer VERB: error: ...`` line).
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from explorer.cli import bounded_int, main, positive_float, positive_int, print_table, safe_text


def run_cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``precision-explorer ARGV`` run in this process."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err: str, verb: str | None) -> str:
    """``err`` is one ``precision-explorer VERB: error:`` line (``precision-explorer: error:``
    when ``verb`` is None: argparse's main parser) and nothing else (no usage block)."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    last = lines[-1]
    prog = "precision-explorer" if verb is None else f"precision-explorer {verb}"
    assert last.startswith(f"{prog}: error: "), err
    assert "Traceback" not in err and "\x1b" not in err
    return last


@pytest.fixture
def no_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a verb starts real work (availability sweep, registry read)."""
    import explorer.queries.availability as availability
    import explorer.runtime.registry as registry

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("work started before the input was checked")

    monkeypatch.setattr(availability, "availability", refuse)
    monkeypatch.setattr(registry, "get_registry", refuse)


REFUSED = [
    # (argv, text the error line contains)
    (["ranges", "--dtype", "float32", "--op", "exp", "--samples", "99999999999"], "--samples"),
    (["ranges", "--dtype", "float32", "--op", "exp", "--samples", "-1"], "--samples"),
    (["ranges", "--dtype", "float32", "--op", "exp", "--samples", "1e3"], "--samples"),
    (["ranges", "--dtype", "float16", "--device", "gpu:7"], "valid devices: CPU, GPU"),
    (["ranges", "--dtype", "float16", "--op", "exp", "--device", "gpu:7"], "valid devices: CPU, GPU"),
    (["ranges", "--dtype", "float16", "--op", "exp", "--backend", "nosuch"], "Valid backends"),
    (["accuracy", "--op", "exp", "--dtype", "half", "--disagreements", "-5"], "--disagreements"),
    (["accuracy", "--op", "exp", "--dtype", "half", "--device", "GPU:0"], "valid devices"),
    (["accuracy", "--op", "exp", "--dtype", "half", "--backend", "nosuch"], "Valid backends"),
    (["kernels", "--timeout", "inf"], "--timeout"),
    (["kernels", "--timeout", "nan"], "--timeout"),
    (["kernels", "--timeout", "0"], "--timeout"),
    (["kernels", "--timeout", "99999"], "--timeout"),
    (["kernels", "--group", "nosuch"], "valid groups: creation, unary"),
    (["kernels", "--device", "gpu:7"], "valid devices: CPU, GPU"),
    (["kernels", "--dtype", "fp17"], "did you mean"),
    (["kernels", "--backend", "tensorfloe"], "did you mean 'tensorflow'"),
    (["kernels", "--op", "not an op!"], "Valid ops"),
    (["bits", "1e-99999999", "--dtype", "half"], "exponent"),
    (["bits", "0.1", "--dtype", "nosuch"], "unknown format"),
    (["train", "--epochs", "0"], "--epochs"),
    (["train", "--epochs", "true"], "--epochs"),
    (["train", "--seed", "-1"], "--seed"),
    (["train", "--model", "rnn"], "valid models"),
    (["lab", "--port", "0", "--dry-run"], "--port"),
    (["lab", "--port", "65536", "--dry-run"], "--port"),
    (["formats", "\x1b]0;pwned\x07half"], "unknown format"),
]


@pytest.mark.parametrize(("argv", "expected"), REFUSED, ids=lambda v: repr(v)[:60])
def test_bad_input_is_refused_with_one_line(
    capsys: Any, no_sweep: None, argv: list[str], expected: str
) -> None:
    start = time.perf_counter()
    code, out, err = run_cli(capsys, *argv)
    assert code == 2, (out, err)
    assert expected in assert_one_line_error(err, argv[0])
    assert time.perf_counter() - start < 5, "refused only after work"


def test_group_is_checked_before_the_sweep(capsys: Any, no_sweep: None) -> None:
    code, _, err = run_cli(capsys, "kernels", "--group", "nosuch", "--backend", "numpy")
    assert code == 2 and "unknown group 'nosuch'" in err


def test_device_indices_and_unknown_spellings_are_refused() -> None:
    from explorer.backends import normalize_device

    assert [normalize_device(d) for d in ("cpu", " GPU ", "/gpu", "device:CPU")] == [
        "CPU",
        "GPU",
        "GPU",
        "CPU",
    ]
    for bad in ("gpu:7", "GPU:0", "/device:GPU:1", "TPU", "", "cpu0"):
        with pytest.raises(ValueError, match="valid devices: CPU, GPU"):
            normalize_device(bad)


@pytest.mark.parametrize("spec", [None, True, False, object(), "x" * 1000])
def test_resolve_refuses_what_is_not_a_format(spec: Any) -> None:
    from explorer.formats import resolve

    with pytest.raises((TypeError, ValueError)):
        resolve(spec)


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"epochs": True}, TypeError),
        ({"epochs": 2.0}, TypeError),
        ({"epochs": 10**6}, ValueError),
        ({"learning_rate": math.inf}, ValueError),
        ({"learning_rate": math.nan}, ValueError),
        ({"learning_rate": "0.1"}, TypeError),
        ({"seed": "x"}, TypeError),
        ({"seed": -1}, ValueError),
        ({"batch_size": False}, TypeError),
        ({"initial_scale": math.inf}, ValueError),
        ({"dynamic_growth_steps": 0}, ValueError),
        ({"histogram_steps": (0, "last")}, TypeError),
        ({"histogram_steps": 5}, TypeError),
        ({"max_train_samples": 1.5}, TypeError),
        ({"record_steps": "yes"}, TypeError),
        ({"policy": None}, TypeError),
        ({"model": 3}, TypeError),
    ],
)
def test_training_config_checks_types_and_ranges(fields: dict[str, Any], error: type) -> None:
    from explorer.training import TrainingConfig

    with pytest.raises(error):
        TrainingConfig(**fields)


def test_training_config_normalises_numpy_numbers() -> None:
    import numpy as np

    from explorer.training import TrainingConfig

    config = TrainingConfig(epochs=np.int64(3), seed=np.int32(5), learning_rate=np.float32(0.5))
    assert type(config.epochs) is int and type(config.seed) is int and type(config.learning_rate) is float


@pytest.mark.parametrize("samples", [-1, 0, 1, 10**7 + 1, True, 2.5, "100"])
def test_sample_counts_are_checked_at_entry(samples: Any) -> None:
    from explorer.queries.accuracy import accuracy
    from explorer.queries.ranges import op_regions

    with pytest.raises((TypeError, ValueError), match="samples"):
        op_regions("exp", "float32", "numpy", samples)
    with pytest.raises((TypeError, ValueError), match="samples"):
        accuracy("exp", "float16", ("numpy",), samples=samples)


def test_argparse_types() -> None:
    assert bounded_int(0, 5)(" 5 ") == 5 and positive_int(3)("1") == 1
    assert positive_float(60.0)("0.5") == 0.5
    for text in ("-1", "6", "1.5", "", "x", "9" * 5000):
        with pytest.raises(argparse.ArgumentTypeError):
            bounded_int(0, 5)(text)
    for text in ("nan", "inf", "-inf", "0", "-1", "61", "1e400", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            positive_float(60.0)(text)


def test_safe_text_strips_control_characters() -> None:
    text = "a\x1b[31mred\x1b[0m\x07\x9b\u202eb\r\nc\td"
    cleaned = safe_text(text)
    assert cleaned == "a[31mred[0mb  c d"
    assert not any(ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F for ch in cleaned)


def test_print_table_cells_are_safe(capsys: Any) -> None:
    print_table([{"name": "x\x1b]0;pwned\x07", "note": "two\nlines"}], ["name", "note"])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert out.splitlines()[1].split() == ["x]0;pwned", "two", "lines"]


def test_error_from_a_verb_is_one_safe_line(capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import explorer.analysis.bits as bits

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("line one\nline two\x1b[2J")

    monkeypatch.setattr(bits, "inspect_value", fail)
    code, _, err = run_cli(capsys, "bits", "0.1", "--dtype", "half")
    assert code == 2
    assert assert_one_line_error(err, "bits") == "precision-explorer bits: error: line one line two[2J"


def test_argparse_error_is_one_safe_line(capsys: Any) -> None:
    code, _, err = run_cli(capsys, "formats", "--bogus\nsecond\x1b[2J")
    assert code == 2
    assert "second[2J" in assert_one_line_error(err, "formats")  # told by the verb's parser


@pytest.mark.parametrize("bug_type", [RuntimeError, TypeError, KeyError])
def test_interrupt_is_130_and_a_bug_is_said_to_be_one(
    capsys: Any, monkeypatch: pytest.MonkeyPatch, bug_type: type[Exception]
) -> None:
    """A bug inside a verb (a TypeError included) is not a usage error: status 70, one line that
    says so, and the traceback in the file the line names."""
    import explorer.analysis.bits as bits

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    def bug(*args: Any, **kwargs: Any) -> Any:
        raise bug_type("a bug")

    monkeypatch.setattr(bits, "inspect_value", interrupted)
    assert run_cli(capsys, "bits", "0.1", "--dtype", "half")[0] == 130
    monkeypatch.setattr(bits, "inspect_value", bug)
    assert main(["bits", "0.1", "--dtype", "half"]) == 70
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "internal error (a bug" in err, err
    trace = Path(err.rsplit("traceback in ", 1)[1].strip())
    try:
        assert f"{bug_type.__name__}: " in trace.read_text() and "def bug" not in err
        assert "in bug" in trace.read_text()  # the frame that raised it
    finally:
        trace.unlink()


def test_version_and_no_verb(capsys: Any) -> None:
    from importlib import metadata

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"precision-explorer {metadata.version('precision-explorer')}"
    assert main(["-V", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert f"numpy {metadata.version('numpy')}" in out and "Python " in out
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: precision-explorer") and "kernels" in out and "explain" in out


def test_help_imports_nothing_heavy() -> None:
    """``--help`` and ``--version`` decide before the formats (ml_dtypes' extension) or any
    framework is imported: a fresh interpreter, its modules read after."""
    code = (
        "import sys; from explorer.cli import main\n"
        "for argv in (['--help'], ['--version'], []):\n"
        "    try: main(argv)\n"
        "    except SystemExit: pass\n"
        "heavy = [m for m in ('ml_dtypes', 'explorer.formats', 'tensorflow', 'torch', 'jax', 'pandas') "
        "if m in sys.modules]\n"
        "print('HEAVY', heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "HEAVY []", out


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
@pytest.mark.parametrize(("argv", "codes"), [(["formats"], {141}), (["--help"], {0, 141})])
def test_closed_stdout_exits_quietly(argv: list[str], codes: set[int]) -> None:
    """``precision-explorer formats | head``: the reader is gone before anything is written."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "explorer", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) in codes, err
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err
