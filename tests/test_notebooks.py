"""Every notebook under notebooks/ (the course, the app, the workshop) runs headless without errors.

Each notebook is executed with nbclient in a fresh kernel, from its own folder,
with a per-notebook timeout; an error output (or a cell raising) fails the test
with the cell's source and the error's last lines.
"""

from __future__ import annotations

import os
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
