"""Read one TensorFlow release's kernel registry inside a throwaway venv (run by ``capture_registries.py``).

Runs under the venv's Python, where only TensorFlow and its own dependencies are installed:
explorer is not importable there (nor ml_dtypes, for the older releases).  So the reading
code is explorer's own, loaded from the source files by path:

* ``explorer/backends/tensorflow_registry.py`` (``read_registry_data`` and ``registry_data``),
  as the module ``explorer.backends.tensorflow_registry``;
* ``explorer/outcome.py`` (needs only NumPy), which it imports;
* from ``explorer/backends/tensorflow_backend.py``, the functions ``read_registry_data`` imports
  (``import_tensorflow``, ``tf_dtype`` and the helper ``_stderr_silenced``), taken out of the
  file with :mod:`ast`, with the file's own top-level imports (the explorer ones left out);
* ``explorer.formats.all_formats`` is the one stand-in: a tuple of ``(name, emulated)`` records,
  the names and flags written by the capture script from the real ``explorer.formats``.

Usage: ``python _capture_worker.py SOURCE_ROOT FORMATS_JSON OUT_JSON``; writes the data of
``read_registry_data()`` to ``OUT_JSON`` (stdout and stderr are left to TensorFlow's chatter).
"""

from __future__ import annotations
import __future__

import ast
import importlib.util
import json
import platform
import sys
import types
from collections import namedtuple
from pathlib import Path
from typing import Any

#: functions of tensorflow_backend.py that read_registry_data uses, directly or not
_BACKEND_FUNCTIONS = ("_stderr_silenced", "import_tensorflow", "tf_dtype")


def _package(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = []
    sys.modules[name] = module
    return module


def _load_by_path(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _backend_functions(path: Path) -> types.ModuleType:
    """The functions named in _BACKEND_FUNCTIONS, compiled from tensorflow_backend.py's source."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    body: list[ast.stmt] = []
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            if module == "__future__" or not (module or "").startswith("explorer"):
                body.append(node)
        elif isinstance(node, ast.FunctionDef) and node.name in _BACKEND_FUNCTIONS:
            body.append(node)
            found.add(node.name)
    missing = set(_BACKEND_FUNCTIONS) - found
    if missing:
        raise ImportError(f"{path} no longer defines {', '.join(sorted(missing))}")
    module = types.ModuleType("explorer.backends.tensorflow_backend")
    module.__file__ = str(path)
    code = compile(
        ast.Module(body=body, type_ignores=[]),
        str(path),
        "exec",
        flags=__future__.annotations.compiler_flag,
        dont_inherit=True,
    )
    exec(code, module.__dict__)
    sys.modules[module.__name__] = module
    return module


def load_reader(source_root: Path, formats: list[tuple[str, bool]]) -> Any:
    """explorer's ``tensorflow_registry`` module, loaded from ``source_root`` without explorer's deps."""
    explorer = _package("explorer")
    backends = _package("explorer.backends")
    explorer.backends = backends  # type: ignore[attr-defined]
    explorer.outcome = _load_by_path("explorer.outcome", source_root / "explorer" / "outcome.py")  # type: ignore[attr-defined]
    record = namedtuple("record", ["name", "emulated"])
    formats_module = types.ModuleType("explorer.formats")
    records = tuple(record(name, emulated) for name, emulated in formats)
    formats_module.all_formats = lambda: records  # type: ignore[attr-defined]
    sys.modules["explorer.formats"] = formats_module
    backends.tensorflow_backend = _backend_functions(  # type: ignore[attr-defined]
        source_root / "explorer" / "backends" / "tensorflow_backend.py"
    )
    return _load_by_path(
        "explorer.backends.tensorflow_registry",
        source_root / "explorer" / "backends" / "tensorflow_registry.py",
    )


def main(argv: list[str]) -> int:
    source_root, formats_json, out_json = Path(argv[0]), Path(argv[1]), Path(argv[2])
    formats = [(str(name), bool(emulated)) for name, emulated in json.loads(formats_json.read_text())]
    reader = load_reader(source_root, formats)
    data = reader.read_registry_data()
    import numpy

    data["_worker"] = {"python": platform.python_version(), "numpy": numpy.__version__}
    out_json.write_text(json.dumps(data), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
