"""``precision-explorer app``: serve the explorer with Voila on localhost, in workshop mode.

Workshop mode: each visitor's kernel is shut down when the page closes (the
shutdown request needs the xsrf check off, voila issue #1458) and idle kernels
are culled, so no kernel is left behind per visitor; the page is served from a
template without the CDN icon font, so a room without internet sees the app intact.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

VERB = "app"
HELP = "serve the explorer app with Voila on 127.0.0.1 (workshop mode: idle kernels culled, works offline)"

#: The template Voila serves: Voila's lab template minus its CDN icon-font links.
TEMPLATE_NAME = "px-offline"
_TEMPLATE = """{%- extends 'voila/templates/lab/index.html.j2' -%}
{#- Voila's lab template loads Font Awesome from a CDN; skip that block level
    (super.super() is nbconvert's lab CSS) so nothing is fetched from the internet. -#}
{%- block notebook_css -%}
  {% if frontend == "voila" %}
    {{ resources.include_js("static/voila-style.js") }}
  {% endif %}
  {{ spinner.css() }}
  <style>
    .jp-mod-noOutputs.jp-mod-noInput { display: none; }
  </style>
  {{ super.super() }}
{%- endblock notebook_css -%}
"""


def find_notebook(name: str = "explorer.ipynb") -> Path:
    """``notebooks/<name>`` in the current directory or the source checkout; FileNotFoundError if neither."""
    candidates = [Path.cwd() / "notebooks" / name, Path(__file__).resolve().parents[2] / "notebooks" / name]
    for path in candidates:
        if path.is_file():
            return path
    tried = ", ".join(str(p) for p in candidates)
    raise FileNotFoundError(
        f"notebooks/{name} not found (tried {tried}); run from the repository root or pass --notebook PATH"
    )


def write_offline_template(root: Path | None = None) -> Path:
    """Write the offline Voila template under ``root`` (a temp dir by default); returns the data dir.

    Put the returned directory on ``JUPYTER_PATH`` and pass ``--template=px-offline``.
    """
    base = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="px-voila-"))
    folder = base / "voila" / "templates" / TEMPLATE_NAME
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conf.json").write_text(json.dumps({"base_template": "lab"}))
    (folder / "index.html.j2").write_text(_TEMPLATE)
    return base


def voila_command(
    notebook: Path,
    port: int,
    *,
    open_browser: bool = False,
    cull_idle_timeout: int = 300,
    cull_interval: int = 60,
    preheat: bool = False,
    offline_template: bool = True,
) -> list[str]:
    """The Voila command line for workshop mode on 127.0.0.1."""
    if not 0 < port < 65536:
        raise ValueError(f"port must be between 1 and 65535, got {port}")
    if cull_idle_timeout < 1 or cull_interval < 1:
        raise ValueError("cull_idle_timeout and cull_interval must be at least 1 second")
    cmd = [
        sys.executable,
        "-m",
        "voila",
        str(notebook),
        f"--port={port}",
        "--Voila.ip=127.0.0.1",
        "--Voila.tornado_settings={'disable_check_xsrf': True}",
        f"--MappingKernelManager.cull_interval={cull_interval}",
        f"--MappingKernelManager.cull_idle_timeout={cull_idle_timeout}",
        "--VoilaExecutor.timeout=120",
    ]
    if not open_browser:
        cmd.append("--no-browser")
    if preheat:
        cmd += ["--preheat_kernel=True", "--pool_size=2"]
    if offline_template:
        cmd.append(f"--template={TEMPLATE_NAME}")
    return cmd


def voila_env(template_root: Path | None) -> dict[str, str]:
    """The environment for Voila: the offline template's data dir first on JUPYTER_PATH."""
    env = dict(os.environ)
    if template_root is not None:
        env["JUPYTER_PATH"] = os.pathsep.join(
            p for p in (str(template_root), env.get("JUPYTER_PATH", "")) if p
        )
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options."""
    parser.add_argument("--port", type=int, default=8866, help="port on 127.0.0.1 (default 8866)")
    parser.add_argument(
        "--notebook", type=Path, default=None, help="notebook to serve (default notebooks/explorer.ipynb)"
    )
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    parser.add_argument(
        "--cull-idle-timeout",
        type=int,
        default=300,
        help="seconds after which an idle visitor's kernel is shut down (default 300)",
    )
    parser.add_argument(
        "--preheat", action="store_true", help="keep 2 kernels warm (faster first page, more memory)"
    )
    parser.add_argument(
        "--cdn-template",
        action="store_true",
        help="use Voila's stock template (loads its icon font from a CDN)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the command instead of running it")


def run(args: argparse.Namespace) -> int:
    """Start the server (or print its command with --dry-run); returns its exit status."""
    import subprocess

    notebook = args.notebook if args.notebook is not None else find_notebook()
    if not Path(notebook).is_file():
        raise FileNotFoundError(f"notebook {notebook} not found")
    template_root = None if args.cdn_template else write_offline_template()
    cmd = voila_command(
        Path(notebook),
        args.port,
        open_browser=not args.no_browser,
        cull_idle_timeout=args.cull_idle_timeout,
        preheat=args.preheat,
        offline_template=not args.cdn_template,
    )
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    print(f"Serving {notebook} at http://127.0.0.1:{args.port}/ (Ctrl-C to stop)", flush=True)
    try:
        return subprocess.call(cmd, env=voila_env(template_root))
    except KeyboardInterrupt:
        return 130
