"""Each backend's cast beyond a format's range, measured: the words the explorer shows against
direct runs of the frameworks' casts, written here.

Oracles: PyTorch's ``Tensor.to``, ml_dtypes' ``astype`` and ONNX Runtime's ``Cast`` node, each
run in this file on the issue's values ``[300, 460, 500, 1000, 1e6, inf]`` (float8_e4m3fn's max is
448, its rounding boundary 464).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from explorer.backends import get_backend
from explorer.backends.cast_behaviour import ISSUE_VALUES, measure, probe_values
from explorer.formats import resolve
from tests.support.require import require_module

E4M3 = resolve("float8_e4m3fn")


class InProcess:
    """A stand-in sandbox: ``call`` runs the function here (no worker process)."""

    def call(self, key, func, *args, timeout=0.0):
        return func(*args)


def _direct_torch(values):
    import torch

    return torch.tensor(values, dtype=torch.float64).to(torch.float8_e4m3fn).to(torch.float64).numpy()


def test_torch_saturates_float8_e4m3fn():
    """PyTorch 2.13 casts [300, 460, 500, 1000, 1e6, inf] to [288, 448, 448, 448, 448, 448]; the
    backend's measurement says saturate, for finite values above max and for inf."""
    require_module("torch")
    direct = _direct_torch(list(ISSUE_VALUES))
    assert direct.tolist() == [288.0, 448.0, 448.0, 448.0, 448.0, 448.0]
    found = get_backend("torch").cast_behaviour("float8_e4m3fn")
    assert found is not None
    assert (found.above_max, found.inf, found.below_subnormal) == ("saturate", "saturate", "round")
    assert list(found.outputs) == _direct_torch(list(found.inputs)).tolist()


def test_ml_dtypes_gives_nan_from_500_up():
    """ml_dtypes casts the same values to [288, 448, nan, nan, nan, nan]; the emulated backend
    (ml_dtypes) measures nan above max and for inf."""
    direct = np.array(ISSUE_VALUES).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    assert direct[:2].tolist() == [288.0, 448.0] and np.isnan(direct[2:]).all()
    found = get_backend("emulated").cast_behaviour("float8_e4m3fn")
    assert found is not None
    assert (found.above_max, found.inf, found.below_subnormal) == ("nan", "nan", "round")
    want = np.array(found.inputs).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    np.testing.assert_array_equal(np.array(found.outputs), want)


def test_onnx_cast_saturates_by_default_and_not_with_saturate_0():
    """ONNX's Cast to float8_e4m3fn (opset 21), built and run here: saturate=1 (the default) gives
    448, saturate=0 NaN; the backend measures saturate and notes the other."""
    require_module("onnxruntime")
    require_module("onnx")
    import onnx
    import onnxruntime as ort
    from onnx import helper

    def cast(saturate):
        extra = {} if saturate is None else {"saturate": saturate}
        node = helper.make_node("Cast", ["x"], ["y"], to=onnx.TensorProto.FLOAT8E4M3FN, **extra)
        graph = helper.make_graph(
            [node],
            "g",
            [helper.make_tensor_value_info("x", onnx.TensorProto.DOUBLE, None)],
            [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT8E4M3FN, None)],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
        model.ir_version = 10
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        (bits,) = session.run(None, {"x": np.array(ISSUE_VALUES)})  # the bits, as uint8
        return np.asarray(bits, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)

    assert cast(None).tolist() == [288.0, 448.0, 448.0, 448.0, 448.0, 448.0]
    assert cast(0)[:2].tolist() == [288.0, 448.0] and np.isnan(cast(0)[2:]).all()
    found = get_backend("onnxruntime").cast_behaviour("float8_e4m3fn")
    assert found is not None and (found.above_max, found.inf) == ("saturate", "saturate")
    assert found.note.startswith("with saturate=0: 472 -> nan")


def test_the_words_follow_the_values():
    """measure() on casts written here: inf, NaN, saturating, flushing, rounding."""
    f16 = resolve("float16")
    assert measure(f16, lambda v: v.astype(np.float16).astype(np.float64)).above_max == "inf"
    saturating = measure(f16, lambda v: np.clip(v, -f16.max, f16.max).astype(np.float16).astype(np.float64))
    assert (saturating.above_max, saturating.inf) == ("saturate", "saturate")

    def flushing(v):
        out = v.astype(np.float16).astype(np.float64)
        return np.where(np.abs(out) < f16.smallest_normal, 0.0, out)

    assert measure(f16, flushing).below_subnormal == "flush"
    above, inf, tiny = probe_values(E4M3)
    assert above.tolist() == [472.0, 896.0, 448000.0] and inf.tolist() == [np.inf]
    assert tiny.tolist() == [E4M3.smallest_subnormal * k for k in (0.25, 0.5, 0.75, 1.0)]


def test_query_and_views_say_where_backends_disagree(monkeypatch, capsys):
    """The query (any worker replaced by an in-process call), the CLI's ``formats --casts`` and the
    Ranges tab's table name torch's saturation and ml_dtypes' NaN, and say they disagree."""
    require_module("torch")
    from explorer.app.ranges_tab import casts_table_html
    from explorer.cli import main
    from explorer.queries.cast_behaviour import cast_behaviours, disagreement

    rows = cast_behaviours(["float8_e4m3fn"], backends=["torch", "emulated"], sandbox=InProcess())
    by = {r["backend"]: r for r in rows}
    assert by["torch"]["gives"] == "472 -> 448, 896 -> 448, 448000 -> 448, inf -> 448"
    assert by["emulated"]["gives"] == "472 -> nan, 896 -> nan, 448000 -> nan, inf -> nan"
    said = disagreement(rows, "float8_e4m3fn")
    assert "above max (nan: emulated; saturate: torch)" in said
    html = casts_table_html("float8_e4m3fn", rows)
    assert "472 -&gt; 448" in html and "saturate" in html and "backends disagree" in html

    monkeypatch.setattr("explorer.backends.installed_backends", lambda: ["torch", "emulated"])
    monkeypatch.setattr("explorer.runtime.sweep_store.worker_call", lambda key, f, *a, timeout: f(*a))
    assert main(["formats", "float8_e4m3fn", "--casts"]) == 0
    out = capsys.readouterr().out
    assert "float8_e4m3fn: backends disagree above max (nan: emulated; saturate: torch)" in out
    assert main(["ranges", "--dtype", "float16", "--casts"]) == 0
    assert "float16" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["float64"])
def test_no_measurement_where_nothing_is_above_the_source(name):
    """float64 is the source of every cast: nothing to measure."""
    assert get_backend("numpy").cast_behaviour(name) is None


def test_measured_casts_are_kept_on_disk_and_a_tampered_file_is_not_used(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second process (a second visitor's kernel) reads the casts from the cache, measuring
    nothing; a file whose row is not a measurement's shape is measured again, not shown."""
    import json

    from explorer.runtime import cast_measure

    monkeypatch.setattr(cast_measure, "_MEASURED", {})
    first = cast_measure.measured("numpy", ["float16"])
    assert first["float16"] is not None and first["float16"]["above_max"] == "inf"  # numpy: inf

    def no_measuring(backend: str, formats: list[str]) -> list[Any]:
        raise AssertionError("measured again instead of read from the cache")

    monkeypatch.setattr(cast_measure, "_MEASURED", {})
    monkeypatch.setattr(cast_measure, "measure_backend", no_measuring)
    assert cast_measure.measured("numpy", ["float16"]) == first

    (path,) = (cache_dir / "casts").glob("numpy-*.json")
    data = json.loads(path.read_text())
    data["float16"]["above_max"] = ["<script>alert(1)</script>"]
    path.write_text(json.dumps(data))
    monkeypatch.setattr(cast_measure, "_MEASURED", {})
    with pytest.raises(AssertionError, match="measured again"):
        cast_measure.measured("numpy", ["float16"])
