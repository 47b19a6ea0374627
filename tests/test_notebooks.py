"""Every notebook under notebooks/ (the course, the app, the workshop) runs headless without errors.

Each notebook is executed with nbclient in a fresh kernel, from its own folder,
with a per-notebook timeout; an error output (or a cell raising) fails the test
with the cell's source and the error's last lines.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
#: Seconds one notebook may take (the training notebooks train real models).
TIMEOUT = int(os.environ.get("PX_NOTEBOOK_TIMEOUT", "300"))
#: The course, in order: notebooks/README.md lists these.
COURSE = ["01_float16_on_cpu", "02_overflow_underflow", "03_mixed_precision_training", "04_fp8"]


def test_the_course_notebooks_and_the_app_exist() -> None:
    names = {p.stem for p in NOTEBOOKS}
    assert "explorer" in names
    assert {"exercises", "solutions"} <= {p.stem for p in NOTEBOOKS if p.parent.name == "workshop"}
    readme = (ROOT / "notebooks" / "README.md").read_text()
    positions = [readme.find(name) for name in COURSE]
    assert all(p >= 0 for p in positions), "notebooks/README.md must list every course notebook"
    assert positions == sorted(positions), "notebooks/README.md must list the course in order"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[str(p.relative_to(ROOT / "notebooks")) for p in NOTEBOOKS])
def test_notebook_runs_without_errors(path: Path) -> None:
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


def _normalised(text: str) -> str:
    """Text with what differs between identical runs removed: object addresses, Styler's table ids."""
    text = re.sub(r" at 0x[0-9a-f]+", " at 0x…", text)
    return re.sub(r"\bT_[0-9a-f]{5}(?=[_\s\"'#])", "T_…", text)


def _text_outputs(nb) -> list[tuple[int, str]]:
    """Every text output of every code cell, except cells tagged ``timing``."""
    texts = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "timing" in cell.get("metadata", {}).get("tags", []):
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                texts.append((i, _normalised(out["text"])))
            for mime in ("text/plain", "text/html"):
                if mime in out.get("data", {}):
                    texts.append((i, _normalised(out["data"][mime])))
    return texts


@pytest.mark.slow
@pytest.mark.parametrize("name", ["01_float16_on_cpu", "02_overflow_underflow", "04_fp8"])
def test_course_notebook_outputs_are_deterministic(name: str) -> None:
    import nbformat
    from nbclient import NotebookClient

    path = ROOT / "notebooks" / f"{name}.ipynb"
    runs = []
    for _ in range(2):
        nb = nbformat.read(path, as_version=4)
        NotebookClient(
            nb, timeout=TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        ).execute()
        runs.append(_text_outputs(nb))
    assert runs[0], f"{name} printed nothing to compare"
    assert runs[0] == runs[1]
