"""``precision-explorer lab``: open JupyterLab at notebooks/explorer.ipynb.

JupyterLab runs with a workspace of its own in a temporary directory (``--LabApp.workspaces_dir``,
removed when Lab stops): the user's saved workspace, written for another folder, would make Lab
restore tabs for files this server does not have, each a 404 in the browser's console.  Lab
reads one more config directory there, first (``JUPYTER_CONFIG_PATH``), that disables only the
news plugin, whose toast covered the app in a 1024 px window.  The
``notebook_shim`` server extension (classic-notebook settings for Jupyter Server; Lab needs none
of it) is not loaded: loading it reads ``ServerApp.token``, which prints a DeprecationWarning.

Lab marks a notebook unsaved as it opens when the notebook's ``language_info`` differs from what
the kernel reports (it writes the kernel's in): the shipped notebook carries ipykernel's for the
Python it was saved with, and :func:`match_language_info` rewrites that one field, before Lab
starts, when this Python's ipykernel reports another (another Python version).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

VERB = "lab"
HELP = "open JupyterLab at notebooks/explorer.ipynb (the explorer app)"
JSON_RESULT = (
    "with --dry-run only: {command: [the JupyterLab command line], url: the address it serves the "
    "notebook at, notebook: its path}"
)
EXIT_OTHER = "JupyterLab's own exit status once it stops"


#: what ``--dry-run`` prints for the workspace directory a real run creates
WORKSPACE_PLACEHOLDER = "<temporary directory>"


def lab_command(
    root: Path,
    notebook: Path,
    port: int,
    *,
    open_browser: bool = True,
    workspaces_dir: Path | str | None = None,
) -> list[str]:
    """The JupyterLab command line serving ``root`` on 127.0.0.1 and opening ``notebook``, with its
    workspace under ``workspaces_dir`` (Lab's default, the user's, when None)."""
    if not 0 < port < 65536:
        raise ValueError(f"port must be between 1 and 65535, got {port}")
    relative = Path(notebook).resolve().relative_to(Path(root).resolve()).as_posix()
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.default_url=/lab/tree/{relative}",
        "--ServerApp.jpserver_extensions=notebook_shim=False",
    ]
    if workspaces_dir is not None:
        cmd.append(f"--LabApp.workspaces_dir={workspaces_dir}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    if not open_browser:
        cmd.append("--no-browser")
    return cmd


def match_language_info(notebook: Path) -> bool:
    """Give ``notebook`` the ``language_info`` this Python's ipykernel reports, when it has
    another (the kernel Lab starts for it runs this Python); returns whether the file changed.

    Only that metadata field changes; the file is written as nbformat writes it (sorted keys,
    one-space indent), in one replace."""
    import json

    from ipykernel.ipkernel import IPythonKernel

    content = json.loads(notebook.read_text(encoding="utf-8"))
    wanted = dict(IPythonKernel.language_info)
    if content.get("metadata", {}).get("language_info") == wanted:
        return False
    content.setdefault("metadata", {})["language_info"] = wanted
    partial = notebook.with_name(f".{notebook.name}.px-tmp")
    partial.write_text(
        json.dumps(content, sort_keys=True, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    partial.replace(notebook)
    return True


#: JupyterLab's plugin that asks, in a toast over the notebook, whether to fetch Jupyter's news
NEWS_PLUGIN = "@jupyterlab/apputils-extension:announcements"


def quiet_news_config(directory: Path) -> Path:
    """A Jupyter config directory under ``directory`` whose ``labconfig/page_config.json`` disables
    :data:`NEWS_PLUGIN` (its toast covered the app at 1024 px); returned for the front of
    ``JUPYTER_CONFIG_PATH``, so that the user's own config directories are read as before."""
    config = directory / "config"
    (config / "labconfig").mkdir(parents=True, exist_ok=True)
    page_config = {"disabledExtensions": {NEWS_PLUGIN: True}}
    (config / "labconfig" / "page_config.json").write_text(json.dumps(page_config))
    return config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options."""
    from explorer.cli import add_json_argument, bounded_int

    parser.add_argument(
        "--port", type=bounded_int(1, 65535), default=8888, help="port on 127.0.0.1 (default 8888)"
    )
    parser.add_argument(
        "--notebook", type=Path, default=None, help="notebook to open (default notebooks/explorer.ipynb)"
    )
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    parser.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    add_json_argument(parser, "with --dry-run: the command and URL; a running server prints no JSON")


def run(args: argparse.Namespace) -> int:
    """Start the server (or print its command with --dry-run, which creates nothing); returns its
    exit status."""
    import tempfile

    from explorer.cli import print_json
    from explorer.cli.app import find_notebook

    if args.json and not args.dry_run:
        raise ValueError("--json needs --dry-run: a running JupyterLab prints no JSON")
    notebook = (args.notebook if args.notebook is not None else find_notebook()).resolve()
    if not notebook.is_file():
        raise FileNotFoundError(f"notebook {notebook} not found")
    root = notebook.parent.parent if notebook.parent.name == "notebooks" else notebook.parent
    if args.dry_run:
        cmd = lab_command(
            root, notebook, args.port, open_browser=not args.no_browser, workspaces_dir=WORKSPACE_PLACEHOLDER
        )
        if args.json:
            relative = notebook.relative_to(root.resolve()).as_posix()
            url = f"http://127.0.0.1:{args.port}/lab/tree/{relative}"
            print_json({"command": cmd, "url": url, "notebook": str(notebook)})
        else:
            print(" ".join(cmd))
        return 0
    if match_language_info(notebook):
        print(f"{notebook}: language_info set to this Python's (Lab would mark it unsaved otherwise)")
    # TensorFlow's C++ logging quiet in the kernels unless --verbose (main() set it) or
    # the environment says otherwise
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with tempfile.TemporaryDirectory(prefix="px-lab-", ignore_cleanup_errors=True) as tmp:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
            [str(quiet_news_config(Path(tmp))), *filter(None, [env.get("JUPYTER_CONFIG_PATH")])]
        )
        cmd = lab_command(
            root, notebook, args.port, open_browser=not args.no_browser, workspaces_dir=workspace
        )
        try:
            return _run_lab(cmd, env)
        except KeyboardInterrupt:
            return 130


def _run_lab(cmd: list[str], env: dict[str, str]) -> int:
    """Run Lab until it exits; its exit status.  A SIGTERM to this process goes on to Lab (without
    this, Lab outlived a ``precision-explorer lab`` stopped by a supervisor or a test); any other
    way out (Ctrl+C: KeyboardInterrupt) kills Lab, as :func:`subprocess.call` does."""
    import signal
    import subprocess

    with subprocess.Popen(cmd, env=env) as lab:
        previous = signal.signal(signal.SIGTERM, lambda signum, _frame: lab.send_signal(signum))
        try:
            return lab.wait()
        except BaseException:
            lab.kill()
            raise
        finally:
            signal.signal(signal.SIGTERM, previous)
