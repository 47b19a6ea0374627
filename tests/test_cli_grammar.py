"""One command-line grammar (issue 13 item 7): shared flags, one JSON shape, exit codes,
quiet by default, and TensorFlow raw ops in their own spelling.

The shared flags are parsed through :func:`explorer.cli.build_parser` (no verb runs); the
JSON shape and exit codes run the verbs in this process on small inputs (numpy/emulated
backends, kernels snapshots); the quiet check runs ``python -m explorer`` with TensorFlow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from explorer.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]

#: the shared flags each verb claims: True repeatable (a list), False single (a string)
CLAIMS: dict[str, dict[str, bool]] = {
    "formats": {"--dtype": True},
    "bits": {"--dtype": True},
    "ranges": {"--op": False, "--dtype": True, "--backend": True, "--device": True},
    "accuracy": {"--op": False, "--dtype": True, "--backend": True, "--device": True},
    "kernels": {"--op": True, "--dtype": True, "--backend": True, "--device": True},
    "train": {},
    "speed": {"--op": True, "--dtype": True, "--backend": True, "--device": False},
    "hardware": {},
    "lab": {},
    "app": {},
}
SHARED = ("--op", "--dtype", "--backend", "--device")
#: what a verb needs on its command line before any shared flag is added
REQUIRED: dict[str, list[str]] = {
    "bits": ["0.1", "--dtype", "half"],
    "ranges": ["--dtype", "half"],
    "accuracy": ["--op", "exp", "--dtype", "half"],
}
#: two values of each shared flag as typed, and what argparse stores for them
VALUES = {
    "--op": (["exp", " log "], ["exp", "log"]),
    "--dtype": (["half", "bf16"], ["float16", "bfloat16"]),
    "--backend": (["np", "ml_dtypes"], ["numpy", "emulated"]),
    "--device": (["cpu", "/gpu"], ["CPU", "GPU"]),
}


def _parse(*argv: str) -> Any:
    return build_parser().parse_args(list(argv))


def _argv(verb: str, flag: str, values: list[str]) -> list[str]:
    base = list(REQUIRED.get(verb, []))
    if flag in base:  # a required flag: replace its value(s) by the ones under test
        i = base.index(flag)
        del base[i : i + 2]
    return [verb, *base, *(a for v in values for a in (flag, v))]


def _help(verb: str, flag: str) -> str:
    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices[verb]  # type: ignore[union-attr]
    action = next(a for a in sub._actions if flag in a.option_strings)
    return str(action.help)


# ------------------------------------------------------------------ shared flags


@pytest.mark.parametrize("verb", sorted(CLAIMS))
def test_every_verb_takes_the_shared_flags_it_claims(verb: str) -> None:
    for flag in SHARED:
        typed, stored = VALUES[flag]
        dest = flag.removeprefix("--")
        if flag not in CLAIMS[verb]:
            with pytest.raises(SystemExit) as exc:
                _parse(*_argv(verb, flag, typed[:1]))
            assert exc.value.code == 2, (verb, flag)
            continue
        if CLAIMS[verb][flag]:
            assert getattr(_parse(*_argv(verb, flag, typed)), dest) == stored, (verb, flag)
        else:  # one per run, spelled the same way; the last one given wins
            assert getattr(_parse(*_argv(verb, flag, typed)), dest) == stored[-1], (verb, flag)


#: the words each shared flag's help has in every verb
HELP_WORDS = {
    "--op": "catalog name (exp, add, qr, cholesky; any case)",
    "--dtype": "format name or alias (float16, half, bf16, e4m3, fp4, ...)",
    "--backend": "numpy, tensorflow, emulated, torch, jax or onnxruntime (aliases: np, tf, ml_dtypes, ort)",
    "--device": "CPU or GPU",
}


def test_each_shared_flag_has_one_help_text() -> None:
    """The same words in every verb (the kind of op, the default and "repeat for several" aside)."""
    for verb, claims in CLAIMS.items():
        for flag, repeat in claims.items():
            text = _help(verb, flag)
            assert HELP_WORDS[flag] in text, (verb, flag, text)
            assert ("repeat for several" in text) == repeat, (verb, flag, text)


def test_op_spelling_is_kept_where_raw_ops_are_taken() -> None:
    assert _parse("kernels", "--op", "Qr", "--op", " qr ").op == ["Qr", "qr"]
    assert _parse("ranges", "--dtype", "half", "--op", "EXP").op == "exp"
    assert _parse("accuracy", "--dtype", "half", "--op", "Tanh").op == "tanh"


@pytest.mark.parametrize(
    ("flag", "bad", "says"),
    [
        ("--dtype", "fp17", "did you mean 'fp16'"),
        ("--backend", "tensorfloe", "did you mean 'tensorflow'"),
        ("--device", "gpu:7", "valid devices: CPU, GPU"),
        ("--op", "not an op!", "Valid ops"),
    ],
)
def test_each_shared_flag_has_one_check(capsys: Any, flag: str, bad: str, says: str) -> None:
    """A bad value is refused by argparse the same way in every verb that takes the flag."""
    for verb, claims in CLAIMS.items():
        if flag not in claims:
            continue
        with pytest.raises(SystemExit) as exc:
            main(_argv(verb, flag, [bad]))
        assert exc.value.code == 2
        last = capsys.readouterr().err.splitlines()[-1]
        assert last.startswith(f"precision-explorer {verb}: error: argument {flag}: "), last
        assert says in last, last


def test_verbose_goes_before_or_after_the_verb() -> None:
    assert _parse("formats").verbose is False
    assert _parse("--verbose", "formats").verbose is True
    assert _parse("formats", "--verbose").verbose is True
    assert _parse("--verbose", "kernels", "--op", "exp").verbose is True


# ------------------------------------------------------------------ one JSON shape


def _document(capsys: Any, *argv: str, status: int = 0) -> Any:
    assert main([*argv, "--json"]) == status, capsys.readouterr().err
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data, dict) and set(data) == {"environment", "result"}, argv
    env = data["environment"]
    assert {"versions", "python", "platform", "cpu"} <= set(env)
    assert env["versions"]["numpy"]
    return data["result"]


def _snapshot(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text(
        json.dumps(
            {"kind": "precision-explorer/kernels", "version": 1, "environment": {"cpu": "x"}, "rows": rows}
        )
    )
    return path


def _row(op: str, raw_op: str, mode: str = "registry", status: str = "ok") -> dict[str, Any]:
    return {
        "backend": "tensorflow",
        "op": op,
        "raw_op": raw_op,
        "dtype": "float16",
        "device": "CPU",
        "mode": mode,
        "status": status,
        "error": "",
        "explanation": "",
        "workaround": "",
    }


ROWS = [
    _row("qr", "Qr"),
    _row("qr", "Mul"),
    _row("qr", "Qr,Mul", mode="eager", status="no_kernel"),
    _row("Qr", "Qr"),
    _row("exp", "Exp", mode="eager"),
]


def test_every_verb_prints_environment_and_result(
    capsys: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    formats = _document(capsys, "formats", "half", "--dtype", "bf16")
    assert [f["name"] for f in formats] == ["float16", "bfloat16"]
    bits = _document(capsys, "bits", "0.1", "--dtype", "half", "--dtype", "bf16")
    assert [(b["format"], b["value"]) for b in bits] == [
        ("float16", 0.0999755859375),
        ("bfloat16", 0.10009765625),
    ]
    table = _document(capsys, "bits", "--table", "--dtype", "fp4")
    assert len(table) == 16 and {r["format"] for r in table} == {"float4_e2m1fn"}
    lines = _document(capsys, "ranges", "--dtype", "half", "--dtype", "e4m3")
    assert [(e["format"], e["number_line"]["max"]) for e in lines] == [
        ("float16", 65504.0),
        ("float8_e4m3fn", 448.0),
    ]
    regions = _document(capsys, "ranges", "--dtype", "e4m3", "--op", "exp", "--backend", "emulated")
    assert [(e["format"], e["backend"], e["device"]) for e in regions] == [
        ("float8_e4m3fn", "emulated", "CPU")
    ]
    assert regions[0]["thresholds"]["overflow"]["positive"]["min"] == 6.5
    acc = _document(
        capsys, "accuracy", "--op", "exp", "--dtype", "e4m3", "--dtype", "e5m2", "--backend", "emulated"
    )
    assert [(e["format"], [b["backend"] for b in e["backends"]]) for e in acc] == [
        ("float8_e4m3fn", ["emulated"]),
        ("float8_e5m2", ["emulated"]),
    ]
    assert all(e["backends"][0]["max_ulp_steps"] == 0 for e in acc)
    snap = _snapshot(tmp_path / "a.json", ROWS)
    rows = _document(capsys, "kernels", "--load", str(snap))
    assert [(r["op"], r["raw_op"]) for r in rows] == [(r["op"], r["raw_op"]) for r in ROWS]
    changed = _snapshot(tmp_path / "b.json", [*ROWS[:-1], {**ROWS[-1], "status": "crashed"}])
    diff = _document(capsys, "kernels", "--diff", str(snap), str(changed), status=1)
    assert set(diff) == {"environment_changes", "cells"} and len(diff["cells"]) == 1
    lab = _document(capsys, "lab", "--dry-run", "--port", "8899")
    assert lab["url"] == "http://127.0.0.1:8899/lab/tree/notebooks/explorer.ipynb"
    assert "--port=8899" in lab["command"]
    app = _document(capsys, "app", "--dry-run", "--port", "8898")
    assert app["url"] == "http://127.0.0.1:8898/" and "--port=8898" in app["command"]
    # train, without training: the verb's own JSON around what run_policies returns
    import explorer.backends.tensorflow_backend as tf_backend
    import explorer.training as training

    class Trained:
        def to_dict(self) -> dict[str, Any]:
            return {"policy": "float32"}

    monkeypatch.setattr(tf_backend, "import_tensorflow", lambda: None)
    monkeypatch.setattr(training, "run_policies", lambda *args, **kwargs: [Trained()])
    assert _document(capsys, "train", "--policy", "float32", "--epochs", "1") == [{"policy": "float32"}]


def test_servers_print_json_only_for_a_dry_run(capsys: Any) -> None:
    for verb in ("lab", "app"):
        assert main([verb, "--json"]) == 2
        err = capsys.readouterr().err
        assert err.strip() == f"precision-explorer {verb}: error: --json needs --dry-run: " + (
            "a running JupyterLab prints no JSON"
            if verb == "lab"
            else "a running Voila server prints no JSON"
        )


# ------------------------------------------------------------------ exit codes


def test_exit_codes(capsys: Any, tmp_path: Path) -> None:
    # 0: answered
    assert main(["formats", "half"]) == 0
    # 1: answered, and no requested backend could run (numpy has no float8) for some --dtype
    assert main(["ranges", "--dtype", "e4m3", "--op", "exp", "--backend", "numpy"]) == 1
    assert main(["ranges", "--dtype", "half", "--dtype", "e4m3", "--op", "exp", "--backend", "numpy"]) == 1
    assert (
        main(["ranges", "--dtype", "e4m3", "--op", "exp", "--backend", "numpy", "--backend", "emulated"]) == 0
    )
    assert main(["accuracy", "--op", "exp", "--dtype", "e4m3", "--backend", "numpy"]) == 1
    assert (
        main(["accuracy", "--op", "exp", "--dtype", "e4m3", "--backend", "numpy", "--backend", "emulated"])
        == 0
    )
    # 1: the snapshots differ
    a = _snapshot(tmp_path / "a.json", ROWS)
    b = _snapshot(tmp_path / "b.json", ROWS[:-1])
    assert main(["kernels", "--diff", str(a), str(a)]) == 0
    assert main(["kernels", "--diff", str(a), str(b)]) == 1
    capsys.readouterr()
    # 2: usage, from argparse (SystemExit) or from the verb (returned), one line on stderr
    with pytest.raises(SystemExit) as exc:
        main(["ranges", "--dtype", "fp17"])
    assert exc.value.code == 2
    assert main(["bits", "--dtype", "half"]) == 2  # no VALUE and no --table
    assert main(["kernels", "--load", str(tmp_path / "absent.json")]) == 2
    assert capsys.readouterr().err.count("error:") == 3


@pytest.mark.parametrize("verb", sorted(CLAIMS))
def test_exit_codes_are_in_every_verbs_help(capsys: Any, verb: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main([verb, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "exit status:\n  0    answered\n" in out
    assert "\n  2    usage: a bad option, value or name" in out
    assert ("\n  1    answered, and the answer is a failure: " in out) == (
        verb in ("ranges", "accuracy", "kernels")
    )
    assert '--json prints {"environment": {...}, "result": ...}; result: ' in out
    assert "--verbose" in out


# ------------------------------------------------------------------ raw-op spelling


def test_raw_op_spelling_in_a_snapshot(capsys: Any, tmp_path: Path) -> None:
    """``--load`` tells raw ops by the snapshot's own raw_op column (no registry read)."""
    snap = str(_snapshot(tmp_path / "s.json", ROWS))
    raw = _document(capsys, "kernels", "--load", snap, "--op", "Qr")
    assert raw and {r["raw_op"] for r in raw} == {"Qr"} and {r["mode"] for r in raw} == {"registry"}
    catalog = _document(capsys, "kernels", "--load", snap, "--op", "qr")
    assert {r["op"] for r in catalog} == {"qr"} and len(catalog) == 3
    upper = _document(capsys, "kernels", "--load", snap, "--op", "EXP")  # no raw op spelled EXP
    assert [r["op"] for r in upper] == ["exp"]


def test_resolve_op_names_follows_the_spelling() -> None:
    from explorer.cli.kernels import resolve_op_names
    from explorer.runtime.registry import get_registry

    asked: list[str] = []

    def registry() -> Any:
        asked.append("registry")
        return get_registry()

    assert resolve_op_names(["qr", "linspace", "add"], registry) == (["qr", "linspace", "add"], [])
    assert asked == []  # catalog names as written need no registry
    names = ["Qr", "LinSpace", "Add", "EXP", "fusedbatchnormv3", "exp"]
    assert resolve_op_names(names, registry) == (["exp"], ["Qr", "LinSpace", "Add", "FusedBatchNormV3"])
    with pytest.raises(ValueError, match="Valid ops"):
        resolve_op_names(["NoSuchOpAnywhere"], registry)


def test_raw_op_spelling_in_a_sweep(capsys: Any) -> None:
    """``--op Qr`` is the raw op Qr alone; ``--op qr`` the catalog op (every raw op it runs)."""
    raw = _document(capsys, "kernels", "--op", "Qr", "--dtype", "float16", "--mode", "registry")
    assert raw and {(r["op"], r["raw_op"], r["mode"]) for r in raw} == {("Qr", "Qr", "registry")}
    assert {r["device"] for r in raw} == {"CPU", "XLA_CPU_JIT"}
    catalog = _document(capsys, "kernels", "--op", "qr", "--dtype", "float16", "--mode", "registry")
    assert {r["op"] for r in catalog} == {"qr"}
    assert {"Qr", "Mul"} <= {r["raw_op"] for r in catalog} and len(catalog) > len(raw)
    for name, catalog_name in (("LinSpace", "linspace"), ("Add", "add")):
        rows = _document(capsys, "kernels", "--op", name, "--dtype", "bf16", "--mode", "registry")
        assert {(r["op"], r["raw_op"]) for r in rows} == {(name, name)}, catalog_name
    # a raw op where the selection has no registry rows: refused, naming the catalog op to run
    assert main(["kernels", "--op", "Qr", "--dtype", "float16", "--mode", "eager"]) == 2
    err = capsys.readouterr().err
    assert "add --mode registry" in err and "catalog op that runs it: qr" in err


# ------------------------------------------------------------------ quiet by default

NOISE = ("oneDNN", "absl", "XLA service", "cpu_feature_guard", "cudart_stub")


def _run(*argv: str, cache: Path, **env_vars: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "PX_SANDBOX_STDERR")}
    env["PX_CACHE_DIR"] = str(cache)  # a fresh cache: TensorFlow really runs
    env.update(env_vars)
    return subprocess.run(
        [sys.executable, "-m", "explorer", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
def test_tensorflow_is_quiet_by_default_and_talks_with_verbose(tmp_path: Path) -> None:
    argv = ["kernels", "--op", "exp", "--dtype", "float16", "--backend", "tensorflow", "--json"]
    # the workers' stderr shown (PX_SANDBOX_STDERR=1): quiet by the log level, not only by redirection
    quiet = _run(*argv, "--mode", "eager", "--mode", "xla", cache=tmp_path / "quiet", PX_SANDBOX_STDERR="1")
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert not [line for line in quiet.stderr.splitlines() if any(n in line for n in NOISE)], quiet.stderr
    rows = json.loads(quiet.stdout)["result"]
    assert {(r["mode"], r["status"]) for r in rows} >= {("eager", "ok")}
    # --verbose (here after the verb): the workers' stderr and TensorFlow's INFO lines come through
    loud = _run(*argv, "--mode", "xla", "--verbose", cache=tmp_path / "loud")
    assert loud.returncode == 0, loud.stderr[-2000:]
    assert "XLA service" in loud.stderr, loud.stderr[-2000:]
    assert json.loads(loud.stdout)["result"]
