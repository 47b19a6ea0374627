"""Print pyproject.toml's ml_dtypes requirement, for .ci/run: the range, or the oldest it admits.

    python scripts/ml_dtypes_pin.py range    # ml_dtypes>=0.5.1,<0.8
    python scripts/ml_dtypes_pin.py oldest   # ml_dtypes==0.5.1

The oldest is the requirement's ``>=`` bound (a pin without one is refused): CI runs the format
tests under it, and the main run under the newest the range admits.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def requirement() -> Requirement:
    """The ml_dtypes entry of the project's dependencies."""
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    found = [Requirement(d) for d in deps if Requirement(d).name.replace("-", "_") == "ml_dtypes"]
    if len(found) != 1:
        raise SystemExit(f"expected one ml_dtypes requirement in {PYPROJECT}, found {len(found)}")
    return found[0]


def oldest(req: Requirement) -> str:
    """The ``>=`` bound of the requirement, pinned."""
    floors = [s.version for s in req.specifier if s.operator == ">="]
    if len(floors) != 1:
        raise SystemExit(f"{req} has no single >= bound")
    return f"ml_dtypes=={floors[0]}"


def main(argv: list[str]) -> int:
    """Print what ``argv[0]`` asks for: ``range`` or ``oldest``."""
    if argv not in (["range"], ["oldest"]):
        print("usage: python scripts/ml_dtypes_pin.py range|oldest", file=sys.stderr)
        return 2
    req = requirement()
    print(f"ml_dtypes{req.specifier}" if argv == ["range"] else oldest(req))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
