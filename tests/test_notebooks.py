"""Every notebook under notebooks/ (the course, the app, the workshop) runs headless without
errors and prints the outputs committed under tests/expected/notebooks/.

Each notebook is executed once with nbclient in a fresh kernel, from its own folder, with a
per-notebook timeout; an error output (or a cell raising) fails the test with the cell's
source and the error's last lines.  Then each code cell's text output is compared with
``tests/expected/notebooks/<path under notebooks/>.json`` (cell index -> outputs):

- stdout streams and ``text/plain`` results; ``text/html`` only where the plain text is a
  bare object repr (a pandas Styler: its table is in the HTML only).  Object addresses and
  Styler table ids are normalised away.  stderr is not compared (TensorFlow's log lines
  carry timestamps and process ids); images are not compared.
- Cells tagged ``timing`` in the notebook are left out (wall-clock figures).
- Cells listed under ``"unstable"`` in the expected file are left out, each with the reason
  its output is not reproducible: it differs between two runs on the same machine (such a
  cell should get a ``timing`` tag in the notebook), or between CPUs (NumPy and oneDNN pick
  their SIMD kernels by CPU features).  They still run, their own assertions with them.

A fast test checks, without running anything, that every notebook has an expected file whose
recorded cell sources are the notebook's current ones: a notebook edited without
regenerating fails at once.

Regenerate the expected outputs after a deliberate change (notebook or explorer/ output)::

    PX_UPDATE_EXPECTED=1 python -m pytest tests/test_notebooks.py

That run executes the notebooks, rewrites the expected files from their outputs (keeping
the ``unstable`` entries and their reasons) and passes; review ``git diff tests/expected``
before committing.  ``PX_NOTEBOOK_TIMEOUT`` sets the seconds one notebook may take.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(p for p in NOTEBOOK_DIR.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
EXPECTED_DIR = Path(__file__).resolve().parent / "expected" / "notebooks"
#: Seconds one notebook may take (the training notebooks train real models).
TIMEOUT = int(os.environ.get("PX_NOTEBOOK_TIMEOUT", "300"))
#: Set to 1 to rewrite the expected outputs from this run instead of comparing.
UPDATE = os.environ.get("PX_UPDATE_EXPECTED") == "1"
REGENERATE = "PX_UPDATE_EXPECTED=1 python -m pytest tests/test_notebooks.py"
#: The course, in order: notebooks/README.md lists these.
COURSE = [
    "01_float16_on_cpu",
    "02_overflow_underflow",
    "03_mixed_precision_training",
    "04_fp8",
    "05_your_model",
    "06_which_layers",
]


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(NOTEBOOK_DIR)) for p in paths]


def expected_path(notebook: Path) -> Path:
    """``notebooks/workshop/solutions.ipynb`` -> ``tests/expected/notebooks/workshop/solutions.json``."""
    return (EXPECTED_DIR / notebook.relative_to(NOTEBOOK_DIR)).with_suffix(".json")


def _normalised(text: str) -> str:
    """Text with what differs between identical runs removed: object addresses, Styler's table ids."""
    text = re.sub(r" at 0x[0-9a-f]+", " at 0x…", text)
    return re.sub(r"\bT_[0-9a-f]{5}(?=[_\s\"'#])", "T_…", text)


def _is_bare_repr(text: str) -> bool:
    return re.fullmatch(r"<[^\n]* at 0x…>", text) is not None


def _source_key(source: str) -> dict[str, str]:
    """How the expected file names a cell: its first line (for people) and a hash (for the test)."""
    first = source.strip().splitlines()[0] if source.strip() else ""
    return {"first_line": first[:100], "sha256": hashlib.sha256(source.encode()).hexdigest()[:16]}


def _is_timing(cell: Any) -> bool:
    return "timing" in cell.get("metadata", {}).get("tags", [])


def cell_outputs(cell: Any) -> list[list[str]]:
    """The compared outputs of one executed code cell, as ``[kind, text]`` pairs in order."""
    outputs = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            if out.get("name") == "stdout":
                outputs.append(["stdout", _normalised(out["text"])])
            continue
        data = out.get("data", {})
        plain = _normalised(data["text/plain"]) if "text/plain" in data else None
        if plain is not None:
            outputs.append(["text/plain", plain])
        if "text/html" in data and (plain is None or _is_bare_repr(plain)):
            outputs.append(["text/html", _normalised(data["text/html"])])
    # consecutive stdout chunks are one stream (how the kernel splits them is timing)
    merged: list[list[str]] = []
    for kind, text in outputs:
        if merged and kind == "stdout" and merged[-1][0] == "stdout":
            merged[-1][1] += text
        else:
            merged.append([kind, text])
    return merged


def _compared_cells(nb: Any, unstable: dict[str, str]) -> dict[str, Any]:
    return {
        str(i): cell
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and not _is_timing(cell) and str(i) not in unstable
    }


def _load_expected(notebook: Path) -> dict[str, Any]:
    path = expected_path(notebook)
    if not path.exists():
        raise AssertionError(f"{path.relative_to(ROOT)} is missing; record it with: {REGENERATE}")
    return json.loads(path.read_text(encoding="utf-8"))


def _write_expected(notebook: Path, nb: Any, previous: dict[str, Any] | None) -> None:
    unstable = (previous or {}).get("unstable", {})
    cells = {
        index: {**_source_key(cell.source), "outputs": cell_outputs(cell)}
        for index, cell in _compared_cells(nb, unstable).items()
    }
    record = {
        "notebook": str(notebook.relative_to(ROOT)),
        "regenerate": REGENERATE,
        "unstable": unstable,
        "cells": cells,
    }
    path = expected_path(notebook)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def test_the_course_notebooks_and_the_app_exist() -> None:
    names = {p.stem for p in NOTEBOOKS}
    assert "explorer" in names
    assert {"exercises", "solutions"} <= {p.stem for p in NOTEBOOKS if p.parent.name == "workshop"}
    readme = (NOTEBOOK_DIR / "README.md").read_text()
    positions = [readme.find(name) for name in COURSE]
    assert all(p >= 0 for p in positions), "notebooks/README.md must list every course notebook"
    assert positions == sorted(positions), "notebooks/README.md must list the course in order"


@pytest.mark.skipif(UPDATE, reason="the expected files are being rewritten")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_expected_outputs_are_recorded_for_the_current_notebook(path: Path) -> None:
    """Without running anything: the expected file exists, names the notebook's current code
    cells (same sources, timing cells out), and gives every unstable cell a reason."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    expected = _load_expected(path)
    assert expected["notebook"] == str(path.relative_to(ROOT))
    unstable = expected.get("unstable", {})
    code = {str(i) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"}
    assert set(unstable) <= code, f"unstable cells {sorted(set(unstable) - code)} are not code cells"
    assert all(isinstance(r, str) and r.strip() for r in unstable.values()), (
        "each unstable cell needs a reason"
    )
    compared = _compared_cells(nb, unstable)
    assert set(expected["cells"]) == set(compared), (
        f"{path.name}: the expected file records cells {sorted(expected['cells'], key=int)}, the notebook "
        f"has {sorted(compared, key=int)} (timing and unstable cells left out); regenerate: {REGENERATE}"
    )
    for index, cell in compared.items():
        recorded = expected["cells"][index]
        assert recorded["sha256"] == _source_key(cell.source)["sha256"], (
            f"{path.name} cell {index} ({recorded['first_line']!r}) changed since its outputs were "
            f"recorded; regenerate: {REGENERATE}"
        )


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_runs_and_prints_the_expected_outputs(path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as exc:
        pytest.fail(f"{path.name} failed after {time.perf_counter() - start:.0f} s:\n{str(exc)[-3000:]}")
    errors = [
        (i, out)
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors, (
        f"{path.name}: error outputs in cells {[i for i, _ in errors]}: {errors[0][1]['evalue']}"
    )
    print(f"{path.relative_to(ROOT)}: {time.perf_counter() - start:.1f} s")
    if UPDATE:
        previous = _load_expected(path) if expected_path(path).exists() else None
        _write_expected(path, nb, previous)
        return
    expected = _load_expected(path)
    compared = _compared_cells(nb, expected.get("unstable", {}))
    assert any(cell_outputs(cell) for cell in compared.values()), f"{path.name} printed nothing to compare"
    for index, cell in compared.items():
        recorded = expected["cells"].get(index)
        assert recorded is not None, (
            f"{path.name} cell {index} has no recorded outputs; regenerate: {REGENERATE}"
        )
        got = cell_outputs(cell)
        want = [list(pair) for pair in recorded["outputs"]]
        if got != want:
            pytest.fail(
                f"{path.name} cell {index} ({recorded['first_line']!r}) printed something else:\n"
                + _diff(want, got)
                + f"\nIf the change is deliberate, regenerate: {REGENERATE}"
            )


def _diff(want: list[list[str]], got: list[list[str]]) -> str:
    import difflib

    def lines(outputs: list[list[str]]) -> list[str]:
        return [f"[{kind}] {line}" for kind, text in outputs for line in text.splitlines()]

    return "\n".join(
        list(difflib.unified_diff(lines(want), lines(got), "expected", "this run", lineterm="", n=2))[:80]
    )


# ------------------------------------------------------------------ figures in the prose

#: a figure in text: 65,504 or 1e-10 or 0.5 (not a digit inside a name such as float16)
_FIGURE = re.compile(r"(?<![\w.])(\d[\d,_]*(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\w])")


def _figures(text: str) -> list[str]:
    return [f.rstrip(",") for f in _FIGURE.findall(text)]


def _number(figure: str) -> float:
    return float(figure.replace(",", "").replace("_", ""))


def _half_unit(figure: str) -> float:
    """Half a unit in the last significant digit the figure shows (``5,000``: 500; ``0.25``: 0.005)."""
    mantissa = re.split(r"[eE]", figure.replace(",", "").replace("_", ""))[0]
    exponent = int(re.split(r"[eE]", figure)[1]) if re.search(r"[eE]", figure) else 0
    if "." in mantissa:
        last = -len(mantissa.split(".")[1])
    else:
        last = len(mantissa) - len(mantissa.rstrip("0")) if mantissa.strip("0") else 0
    return 0.5 * 10.0 ** (last + exponent)


def _prose(source: str) -> str:
    """A markdown cell's running text: no code spans, headings or list numbers."""
    text = re.sub(r"`[^`]*`", " ", source)
    text = re.sub(r"^#.*$", " ", text, flags=re.M)
    return re.sub(r"^\s*\d+\.\s", " ", text, flags=re.M)


@pytest.mark.parametrize("name", ["02_overflow_underflow", "06_which_layers"])
def test_figures_in_the_text_of_notebook_02_are_printed_by_its_cells(name: str) -> None:
    """Issue 24, item 4: notebook 02 says the figures its text quotes are the ones its cells
    print; each figure of its markdown is within its last digit of a number a code cell prints
    (its recorded outputs) or is given (its source: an input such as ``n=10_000``).  Notebook
    06 (issue 37) says the same."""
    import nbformat

    path = NOTEBOOK_DIR / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    recorded = _load_expected(path)["cells"]
    printed = " ".join(text for cell in recorded.values() for _, text in cell["outputs"])
    typed = " ".join(cell.source for cell in nb.cells if cell.cell_type == "code")
    known = [_number(f) for f in _figures(printed + " " + typed)]
    missing = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for figure in _figures(_prose(cell.source)):
            value, tolerance = _number(figure), _half_unit(figure)
            if not any(abs(k - value) <= tolerance for k in known):
                missing.append(figure)
    assert not missing, f"figures in the text that no cell prints or is given: {missing}"


def test_notebook_04_states_the_amax_history_length_its_cell_uses() -> None:
    """Issue 24, item 4: the text said the history holds 16 steps, the cell below used
    ``history_len=4``; the cell prints its length, and the text states no other."""
    import nbformat

    path = NOTEBOOK_DIR / "04_fp8.ipynb"
    nb = nbformat.read(path, as_version=4)
    (index,) = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "DelayedScaler(" in c.source]
    used = int(re.search(r"history_len=(\d+)", nb.cells[index].source).group(1))  # type: ignore[union-attr]
    stated = [int(n) for n in re.findall(r"(\d+) steps", nb.cells[index - 1].source)]
    assert all(n == used for n in stated), (stated, used)
    outputs = _load_expected(path)["cells"][str(index)]["outputs"]
    assert any(f"the last {used} steps" in text for kind, text in outputs if kind == "stdout"), outputs
