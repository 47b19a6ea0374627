"""Hostile ``.keras`` and ``.npy`` files (issue 39), each refused by the command line: time and
peak memory of each refusal.

    python benchmarks/hostile_files.py [--small]

Each file is built here (the zip bombs written by hand as a repeated raw-deflate block, so that a
2.2 GiB member costs a few megabytes and a second to write), then given to
``precision-explorer model --file`` / ``--inputs`` or ``blocks --tensor`` in a fresh Python
process; the table gives the exit status, the one line of stderr, the process's wall time (its
interpreter's start and ``import explorer.cli`` included), the time spent in the command line's
``main()`` (after that import) and the process's peak resident memory (``ru_maxrss``), and whether
TensorFlow was imported.  ``--small`` makes the bombs 20 MiB (the size the tests use).

The same builders are used by ``tests/test_keras_archive.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

GIB = 1024**3
MIB = 1024**2


def _layer(
    class_name: str, config: dict[str, object], input_shape: list[int | None] | None
) -> dict[str, object]:
    layer: dict[str, object] = {
        "module": "keras.layers",
        "class_name": class_name,
        "config": config,
        "registered_name": None,
    }
    if input_shape is not None:
        layer["build_config"] = {"input_shape": input_shape}
    return layer


def sequential_config(layers: list[dict[str, object]], input_shape: list[int | None]) -> dict[str, object]:
    """A Keras 3 ``Sequential`` config as ``model.save`` writes it (the keys the loader reads)."""
    first = _layer(
        "InputLayer", {"batch_shape": input_shape, "dtype": "float32", "name": "input_layer"}, None
    )
    return {
        "module": "keras",
        "class_name": "Sequential",
        "config": {"name": "sequential", "trainable": True, "layers": [first, *layers]},
        "registered_name": None,
        "build_config": {"input_shape": input_shape},
    }


def dense(units: int, inputs: int, name: str = "dense") -> dict[str, object]:
    """A serialized ``Dense(units)`` layer built on ``inputs`` features."""
    return _layer(
        "Dense", {"name": name, "units": units, "use_bias": True, "activation": "linear"}, [None, inputs]
    )


def write_keras(path: Path, config: object, extra: dict[str, bytes] | None = None) -> Path:
    """A ``.keras``-like zip: ``metadata.json``, ``config.json`` (``config`` as JSON, or bytes as is)."""
    text = config if isinstance(config, bytes) else json.dumps(config).encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("metadata.json", json.dumps({"keras_version": "3.15.1"}))
        archive.writestr("config.json", text)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return path


def write_bomb(path: Path, members: dict[str, tuple[bytes, int]]) -> Path:
    """A valid zip whose members are ``unit`` repeated ``count`` times, deflated once and the
    compressed block repeated (a raw-deflate stream of full-flushed blocks concatenates)."""
    entries = []
    with open(path, "wb") as out:
        for name, (unit, count) in members.items():
            packer = zlib.compressobj(9, zlib.DEFLATED, -15)
            block = packer.compress(unit) + packer.flush(zlib.Z_FULL_FLUSH)
            ending = zlib.compressobj(9, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)
            crc = 0
            for _ in range(count):
                crc = zlib.crc32(unit, crc)
            size, packed = len(unit) * count, len(block) * count + len(ending)
            if size >= 2**32 or packed >= 2**32:
                raise ValueError("members of 4 GiB and more need zip64")
            offset = out.tell()
            encoded = name.encode()
            out.write(
                struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, packed, size, len(encoded), 0)
            )
            out.write(encoded)
            for _ in range(count):
                out.write(block)
            out.write(ending)
            entries.append((encoded, crc, packed, size, offset))
        directory = out.tell()
        for encoded, crc, packed, size, offset in entries:
            out.write(
                struct.pack(
                    "<IHHHHHHIIIHHHHHII",
                    0x02014B50,
                    20,
                    20,
                    0,
                    8,
                    0,
                    0x21,
                    crc,
                    packed,
                    size,
                    len(encoded),
                    0,
                    0,
                    0,
                    0,
                    0,
                    offset,
                )
            )
            out.write(encoded)
        end = out.tell()
        out.write(
            struct.pack(
                "<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), end - directory, directory, 0
            )
        )
    return path


def keras_files(folder: Path, bomb_bytes: int = 20 * MIB) -> dict[str, tuple[Path, str]]:
    """The hostile ``.keras`` files, each with what its refusal says; ``bomb_bytes`` is the size of
    the expanded config of spaces and of each of the nine asset members."""
    files: dict[str, tuple[Path, str]] = {}
    config = sequential_config([dense(200_000_000, 16)], [None, 16])
    files["Dense(units=200000000)"] = (
        write_keras(folder / "dense_200m.keras", config),
        "declares more than 100,000,000 parameters",
    )
    chain = [
        {"module": "keras.layers", "class_name": "Dense", "config": {"units": 1}} for _ in range(109_689)
    ]
    files["109,689 chained Dense"] = (
        write_keras(folder / "chain.keras", sequential_config(chain, [None, 1])),
        "declares 109,691 classes (layers, initializers...)",
    )
    unit = b" " * MIB
    files["config of spaces"] = (
        write_bomb(folder / "spaces.keras", {"config.json": (unit, bomb_bytes // MIB)}),
        "has a config.json of",
    )
    small = json.dumps(sequential_config([dense(2, 4)], [None, 4])).encode()
    assets = {f"assets/blob{i}": (bytes(MIB), bomb_bytes // MIB) for i in range(9)}
    files["nine asset members"] = (
        write_bomb(folder / "assets.keras", {"config.json": (small, 1), **assets}),
        "bytes of assets" if bomb_bytes * 9 <= 1024 * MIB else "uncompressed; at most",
    )
    deep = b'{"class_name": "Sequential", "config": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    files["deep nesting"] = (write_keras(folder / "deep.keras", deep), "levels deep; at most 100")
    no_config = folder / "no_config.keras"
    with zipfile.ZipFile(no_config, "w") as archive:
        archive.writestr("metadata.json", "{}")
    files["no config.json"] = (no_config, "holds no config.json")
    whole = write_keras(folder / "whole.keras", sequential_config([dense(2, 4)], [None, 4])).read_bytes()
    (folder / "truncated.keras").write_bytes(whole[: len(whole) // 2])
    files["truncated"] = (folder / "truncated.keras", "is not a complete zip archive")
    (folder / "empty.keras").write_bytes(b"")
    files["0 bytes"] = (folder / "empty.keras", "is empty (0 bytes)")
    (folder / "text.keras").write_text("not a model\n")
    files["not a zip"] = (folder / "text.keras", "is not a zip archive")
    (folder / "legacy.keras").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(2000))
    files["legacy HDF5"] = (folder / "legacy.keras", "is a legacy HDF5 (.h5) Keras file")
    link = folder / "link.keras"
    link.symlink_to(folder / "nowhere.keras")
    files["dangling symlink"] = (link, "is a symbolic link to")
    custom = sequential_config(
        [
            {
                "module": "my_project.layers",
                "class_name": "Sneaky",
                "config": {"name": "s"},
                "registered_name": "my>Sneaky",
            }
        ],
        [None, 4],
    )
    files["custom class"] = (
        write_keras(folder / "custom.keras", custom),
        "Sneaky (module my_project.layers)",
    )
    return files


def npy_files(folder: Path) -> dict[str, tuple[Path, str]]:
    """The hostile ``.npy`` files (built by the tests' helper)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.test_tensor_file import hostile_npy_files

    return hostile_npy_files(folder)


_PROBE = """
import resource, sys, time
from explorer.cli import main
start = time.perf_counter()
status = main(sys.argv[1:])
took = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"@@ {status} {took:.3f} {peak} {int('tensorflow' in sys.modules)}")
"""


def measure(argv: list[str]) -> dict[str, object]:
    """One command in a fresh process: exit status, stderr lines, wall time, peak RSS."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).resolve().parents[1],
    )
    wall = time.perf_counter() - start
    probe = [line for line in done.stdout.splitlines() if line.startswith("@@ ")]
    status, took, rss_kib, tf = probe[-1].split()[1:] if probe else ("?", "nan", "0", "?")
    return {
        "exit": status,
        "stderr": done.stderr.strip().splitlines(),
        "wall_s": wall,
        "main_s": float(took),
        "peak_rss_mib": int(rss_kib) / 1024,
        "tensorflow": tf == "1",
    }


def main() -> None:
    """Build the files, refuse each, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="20 MiB bombs instead of 2.2 GiB / 250 MiB")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "k").mkdir()
        (folder / "n").mkdir()
        started = time.perf_counter()
        keras = keras_files(folder / "k", 20 * MIB) if args.small else None
        if keras is None:
            keras = keras_files(folder / "k", 20 * MIB)
            spaces = write_bomb(folder / "k" / "spaces.keras", {"config.json": (b" " * MIB, 2253)})
            keras["config of spaces"] = (spaces, "uncompressed; at most")
            small = json.dumps(sequential_config([dense(2, 4)], [None, 4])).encode()
            blobs = {f"assets/blob{i}": (bytes(MIB), 250) for i in range(9)}
            assets = write_bomb(folder / "k" / "assets.keras", {"config.json": (small, 1), **blobs})
            keras["nine asset members"] = (assets, "uncompressed; at most")
        built = time.perf_counter() - started
        npy = npy_files(folder / "n")
        rows = []
        for name, (path, says) in keras.items():
            size = os.lstat(path).st_size
            rows.append((name, size, says, measure(["model", "--file", str(path)])))
        for name, (path, says) in npy.items():
            size = os.lstat(path).st_size
            rows.append(
                (
                    f".npy {name} (--inputs)",
                    size,
                    says,
                    measure(["model", "--builtin", "mlp", "--inputs", str(path)]),
                )
            )
            rows.append((f".npy {name} (--tensor)", size, says, measure(["blocks", "--tensor", str(path)])))
        print(
            f"python {sys.version.split()[0]}; files built in {built:.1f} s; "
            f"bombs: {'20 MiB' if args.small else 'full size'}"
        )
        print(
            "| file | bytes on disk | exit | one line | says the expected | wall s (process) | s in main() "
            "| peak RSS MiB | TensorFlow imported |"
        )
        print("|---|---:|---:|---|---|---:|---:|---:|---|")
        for name, size, says, result in rows:
            lines = result["stderr"]
            assert isinstance(lines, list)
            one = len(lines) == 1
            text = lines[0] if lines else ""
            print(
                f"| {name} | {size:,} | {result['exit']} | {'yes' if one else f'NO ({len(lines)})'} | "
                f"{'yes' if says in text else 'NO'} | {result['wall_s']:.2f} | {result['main_s']:.3f} | "
                f"{result['peak_rss_mib']:.0f} | {'yes' if result['tensorflow'] else 'no'} |"
            )
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", "import explorer.cli"], check=True, cwd=Path(__file__).resolve().parents[1]
        )
        print(
            f"\nbaseline: a process that only imports explorer.cli took {time.perf_counter() - start:.2f} s "
            f"here (load average {os.getloadavg()[0]:.2f})"
        )
        print()
        for name, _, _, result in rows:
            lines = result["stderr"]
            assert isinstance(lines, list)
            print(f"- {name}: {lines[0][:240] if lines else '(nothing on stderr)'}")


if __name__ == "__main__":
    main()
