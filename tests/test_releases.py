"""The shipped per-release registries (``explorer/data/registries``) and their histories.

Three independent checks:

* the file of the installed TensorFlow equals what the live registry gives in this process,
  and a Registry built from it answers like the live one over the full matrix;
* the histories of the cases of :data:`tests.support.shipped_registries.CASES`, from
  :mod:`explorer.analysis.releases`, equal those of a separate minimal reader
  (:mod:`tests.support.shipped_registries`: it parses the JSON itself: the op's kernels for the
  device type, DEFAULT included where TensorFlow uses it, and their constraint on the named
  data attribute);
* for the installed release, the CPU cases are run in TensorFlow itself.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
from typing import Any

import pytest
from packaging.version import Version

from explorer.analysis import releases
from explorer.analysis.releases import (
    ABSENT,
    ReleaseStatus,
    changes,
    first_release_with_kernel,
    history,
    release_registry,
    shipped_releases,
)
from explorer.backends.tensorflow_registry import Registry
from tests.support import shipped_registries
from tests.support.require import require_module
from tests.support.shipped_registries import CASES, DATA_DIR, expected_status, raw

# ---------------------------------------------------------------- the package data itself


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_the_index_lists_every_file_with_its_sha256_and_size() -> None:
    index = shipped_registries.index()
    listed = {entry["file"] for entry in index["releases"]}
    assert listed == {p.name for p in DATA_DIR.glob("tensorflow-*.json.gz")}
    assert len(listed) >= 10
    for entry in [*index["releases"], index["ops_index"]]:
        body = (DATA_DIR / entry["file"]).read_bytes()
        assert hashlib.sha256(body).hexdigest() == entry["sha256"], entry["file"]
        assert len(body) == entry["bytes"], entry["file"]
    for entry in index["releases"]:
        data = raw(entry["release"])
        assert data["release"] == entry["release"]
        assert Version(data["tf_version"]).base_version == Version(entry["release"]).base_version
        assert data["ops"] and data["kernels"] and data["float_dtypes"]


def test_shipped_releases_are_the_index_releases_oldest_first() -> None:
    shipped = shipped_releases()
    assert shipped == sorted((e["release"] for e in shipped_registries.index()["releases"]), key=Version)
    assert len(set(shipped)) == len(shipped)
    assert "2.21.0" in shipped


def test_the_ops_index_was_built_from_the_shipped_files() -> None:
    index = shipped_registries.index()
    ops_index = json.loads(gzip.decompress((DATA_DIR / index["ops_index"]["file"]).read_bytes()))
    assert ops_index["sources"] == {e["release"]: e["sha256"] for e in index["releases"]}
    assert releases._ops_index() is not None  # so history() reads it, not every file


def test_an_unknown_release_is_refused_with_the_shipped_ones() -> None:
    with pytest.raises(ValueError, match=r"no shipped registry for TensorFlow '1\.15\.0'.*2\.21\.0"):
        release_registry("1.15.0")


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
@pytest.mark.parametrize("release", ["oldest", "newest"])
def test_a_one_op_registry_answers_like_the_full_registry(release: str) -> None:
    shipped = shipped_releases()
    version = shipped[0] if release == "oldest" else shipped[-1]
    full = release_registry(version)
    for name, info in full.ops.items():
        one = releases._op_registry(version, name)
        assert one is not None, name
        assert one.device_types == full.device_types
        assert one.float_dtypes == full.float_dtypes
        assert one.ops[name] == info, name


# ---------------------------------------------------------------- the installed release, against the live one


@pytest.fixture(scope="module")
def live() -> dict[str, Any]:
    require_module("tensorflow")
    from explorer.backends.tensorflow_registry import read_registry_data

    data = read_registry_data()
    if data["tf_version"] not in shipped_releases():
        pytest.skip(f"installed TensorFlow {data['tf_version']} has no shipped registry")
    return data


def _sorted_kernels(data: dict[str, Any]) -> dict[str, list[str]]:
    return {op: sorted(json.dumps(k, sort_keys=True) for k in ks) for op, ks in data["kernels"].items()}


def test_live_the_installed_release_file_equals_the_live_registry(live: dict[str, Any]) -> None:
    shipped = raw(live["tf_version"])
    assert shipped["ops"] == live["ops"]
    # the attributes keep their OpDef order: it decides the data attribute of some ops (DefaultAttrs)
    assert {op: list(d["attrs"]) for op, d in shipped["ops"].items()} == {
        op: list(d["attrs"]) for op, d in live["ops"].items()
    }
    assert _sorted_kernels(shipped) == _sorted_kernels(live)
    assert shipped["float_dtypes"] == live["float_dtypes"]
    for key in ("data_version", "tf_version", "labelled_kernels_ignored", "xla_error"):
        assert shipped[key] == live[key], key


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_live_the_shipped_registry_answers_like_the_live_one_over_the_full_matrix(
    live: dict[str, Any],
) -> None:
    import pandas as pd

    shipped = release_registry(live["tf_version"])
    live_registry = Registry(live)
    assert shipped.device_types == live_registry.device_types
    pd.testing.assert_frame_equal(shipped.matrix(), live_registry.matrix())


# ---------------------------------------------------------------- the cases


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
@pytest.mark.parametrize(("op", "attr", "dtype", "device"), CASES, ids=["-".join(c) for c in CASES])
def test_history_matches_the_minimal_reader(op: str, attr: str, dtype: str, device: str) -> None:
    got = history(op, dtype, device)
    assert [e.version for e in got] == shipped_releases()
    expected = [expected_status(raw(v), op, attr, dtype, device) for v in shipped_releases()]
    assert [e.status for e in got] == expected
    for entry in got:
        assert bool(entry.reason) == (entry.status == ABSENT), entry
        if entry.status != ABSENT:  # the minimal reader was told the data attribute: check it
            assert release_registry(entry.version).op(op).data_attr == attr
    first = next((e.version for e in got if e.status == "ok"), None)
    assert first_release_with_kernel(op, dtype, device) == first


def _run_on_cpu(op: str, dtype_name: str) -> str:
    """Run the raw op in TensorFlow on the CPU: "ok" when it runs in that dtype, else the status."""
    require_module("tensorflow")
    import tensorflow as tf

    from explorer.backends.tensorflow_backend import import_tensorflow

    import_tensorflow()
    dtype = tf.dtypes.as_dtype(dtype_name)
    raw_ops = tf.raw_ops
    x = tf.random.stateless_uniform
    calls = {
        "Range": lambda: raw_ops.Range(
            start=tf.constant(0, dtype), limit=tf.constant(12, dtype), delta=tf.constant(1, dtype)
        ),
        "FloorMod": lambda: raw_ops.FloorMod(
            x=tf.constant([5.0, -5.0], dtype), y=tf.constant([3.0, 3.0], dtype)
        ),
        "RGBToHSV": lambda: raw_ops.RGBToHSV(images=tf.cast(x([2, 3], seed=(1, 2)), dtype)),
        "Conv2D": lambda: raw_ops.Conv2D(
            input=tf.cast(x([1, 5, 5, 2], seed=(1, 2)), dtype),
            filter=tf.cast(x([3, 3, 2, 4], seed=(3, 4)), dtype),
            strides=[1, 1, 1, 1],
            padding="SAME",
        ),
        "DepthwiseConv2dNative": lambda: raw_ops.DepthwiseConv2dNative(
            input=tf.cast(x([1, 5, 5, 2], seed=(1, 2)), dtype),
            filter=tf.cast(x([3, 3, 2, 2], seed=(3, 4)), dtype),
            strides=[1, 1, 1, 1],
            padding="SAME",
        ),
        "Qr": lambda: raw_ops.Qr(input=tf.cast(x([3, 3], seed=(1, 2)), dtype)),
    }
    try:
        with tf.device("/CPU:0"):
            result = calls[op]()
            outputs = result if isinstance(result, list | tuple) else [result]
            assert all(o.dtype == dtype for o in outputs)
            assert all(o.device.endswith("CPU:0") for o in outputs)
    except tf.errors.NotFoundError:
        return "no_kernel"
    except (tf.errors.InvalidArgumentError, TypeError) as exc:
        if "allowed values" in str(exc) or "allowed list" in str(exc):
            return "unsupported_dtype"
        raise
    return "ok"


@pytest.mark.parametrize(
    ("op", "attr", "dtype"),
    [(op, attr, dtype) for op, attr, dtype, device in CASES if device == "CPU"],
    ids=[f"{op}-{dtype}" for op, _, dtype, device in CASES if device == "CPU"],
)
def test_live_the_installed_release_runs_the_cpu_cases_as_shipped(
    live: dict[str, Any], op: str, attr: str, dtype: str
) -> None:
    version = live["tf_version"]
    shipped = expected_status(raw(version), op, attr, dtype, "CPU")
    assert history(op, dtype, "CPU")[shipped_releases().index(version)].status == shipped
    assert _run_on_cpu(op, dtype) == shipped


# ---------------------------------------------------------------- absent values and errors


def test_an_op_younger_than_the_oldest_release_is_absent_there_not_an_error() -> None:
    oldest, newest = shipped_releases()[0], shipped_releases()[-1]
    young = sorted(set(raw(newest)["ops"]) - set(raw(oldest)["ops"]))
    assert young, "no op was added since the oldest shipped release"
    got = history(young[0], "float32", "CPU")
    assert got[0].status == ABSENT and young[0] in got[0].reason and oldest in got[0].reason
    assert got[-1].status != ABSENT


def test_a_dtype_younger_than_the_oldest_release_is_absent_there() -> None:
    oldest, newest = shipped_releases()[0], shipped_releases()[-1]
    young = [d for d in raw(newest)["float_dtypes"] if d not in raw(oldest)["float_dtypes"]]
    if not young:
        pytest.skip("every float dtype of the newest release exists in the oldest")
    got = history("Cast", young[0], "CPU")
    assert got[0] == ReleaseStatus(oldest, ABSENT, f"TensorFlow {oldest} has no {young[0]} dtype")
    assert got[-1].status == "ok"


def test_names_no_release_knows_are_refused_up_front() -> None:
    with pytest.raises(ValueError, match="did you mean Range"):
        history("Rnage", "float16", "CPU")
    with pytest.raises(ValueError, match="no shipped TensorFlow release has device type 'NPU'"):
        history("Range", "float16", "NPU")
    with pytest.raises(ValueError, match="unknown format"):
        history("Range", "float17", "CPU")
    assert history("range", "half", "CPU") == history("Range", "float16", "CPU")


def test_changes_keeps_the_releases_where_the_status_changed() -> None:
    entries = [
        ReleaseStatus("2.12.0", ABSENT, "no op"),
        ReleaseStatus("2.13.0", "no_kernel"),
        ReleaseStatus("2.14.0", "no_kernel"),
        ReleaseStatus("2.15.0", "ok"),
        ReleaseStatus("2.16.1", "ok"),
    ]
    assert [e.version for e in changes(entries)] == ["2.13.0", "2.15.0"]
    assert changes(entries[:1]) == [] and changes([]) == []


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_history_does_not_import_tensorflow() -> None:
    code = (
        "import sys; from explorer.analysis.releases import history; "
        "history('Range', 'float16', 'CPU'); assert 'tensorflow' not in sys.modules, 'tensorflow imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_release_source_names_the_release_and_its_capture_date() -> None:
    for entry in shipped_registries.index()["releases"]:
        assert releases.release_source(entry["release"]) == (
            f"shipped {entry['release']} (captured {entry['captured']})"
        )
    with pytest.raises(ValueError, match=r"shipped: 2\.12\.0"):
        releases.release_source("1.15.0")


def test_known_op_and_releases_with_op_follow_the_files() -> None:
    oldest, newest = shipped_releases()[0], shipped_releases()[-1]
    young = sorted(set(raw(newest)["ops"]) - set(raw(oldest)["ops"]))[0]
    assert releases.known_op(young.lower()) == young and releases.known_op(young) == young
    assert releases.known_op("NoSuchOpInAnyRelease") is None
    assert releases.releases_with_op(young) == [v for v in shipped_releases() if young in raw(v)["ops"]]
