"""``precision-explorer app``: serve the explorer with Voila on localhost, in workshop mode.

Workshop mode:

- each visitor's kernel is shut down when the page closes (the shutdown request needs
  the xsrf check off, voila issue #1458), and idle kernels are culled even while their
  tab stays open (``cull_connected``), after ``--cull-idle-timeout`` seconds;
- at most ``--max-kernels`` kernels run at once; a further visitor gets a "the explorer
  is full" page (HTTP 503) instead of a new kernel; a page whose websocket never connects
  gives its kernel back after ``--connect-grace`` quiet seconds (a page finding the cap taken by
  such kernels waits for them), and one address starts at most ``--client-starts`` kernels a
  minute (:mod:`explorer.server.kernels`);
- only requests for 127.0.0.1, localhost, [::1] (and ``--allow-host`` names) are
  answered: others get 403, which stops DNS-rebinding pages from reaching the server;
- the page is served from a template without the CDN icon font, so a room without
  internet sees the app intact, and with the app's first view written into the page as
  static HTML (:meth:`explorer.App.preview_html`), shown until Voila's scripts draw the app:
  for the shipped notebook the server's own copy (:func:`start_first_view`, written once as the
  server starts) comes at the top of the page, before the visitor's kernel has started; the
  notebook's copy comes with its output;
- one kernel that has already run the notebook waits for the first visitor (a pool of one,
  refilled ``REFILL_DELAY_S`` seconds after a visitor takes it; ``--preheat N`` for more, ``--preheat
  0`` for none, none with ``--max-kernels 1``): their page comes from a warm kernel, and one
  arriving while that kernel still starts waits for it
  (:meth:`explorer.server.kernels.CappedKernelManager.wait_for_pool`);
- at most ``--training-slots`` training runs (worker processes) train at once on the
  machine, whichever visitor started them; the others wait in a first-come-first-served
  queue (:mod:`explorer.training.queue`).  The setting reaches every kernel as
  ``$PX_TRAINING_SLOTS`` in Voila's environment, which the kernels inherit.

Voila runs as ``python -m explorer.server.voila_main`` (Voila plus the Host guard and the
kernel cap, see :mod:`explorer.server.voila_main`) in a session of its own; SIGTERM,
SIGINT or SIGHUP to this command stops Voila and every kernel it started
(:func:`explorer.server.process_tree.supervise`); if this command is killed (SIGKILL),
Voila stops itself (:func:`explorer.server.process_tree.stop_with_launcher`), its kernels
with it, and removes the temporary directory below.  The offline template and Voila's
connection files live in one ``px-voila-*`` temporary directory, removed on exit;
``--dry-run`` only prints the command and creates nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from explorer.server.limits import (
    DEFAULT_CLIENT_STARTS,
    DEFAULT_CONNECT_GRACE_S,
    DEFAULT_MAX_KERNELS,
    RATE_WINDOW_S,
    default_max_kernels,
)

VERB = "app"
HELP = "serve the explorer app with Voila on 127.0.0.1 (workshop mode: idle kernels culled, works offline)"
JSON_RESULT = (
    "with --dry-run only: {command: [the Voila command line], url: the address it serves, "
    "env: {PX_TRAINING_SLOTS: the training slots}}"
)
EXIT_OTHER = "Voila's own exit status once it stops"

#: seconds of inactivity after which a visitor's kernel is culled, even with the tab open
DEFAULT_CULL_IDLE_TIMEOUT = 900
TEMPLATE_NAME = "px-offline"
#: the app's first view, written into the template's folder by :func:`start_first_view`
FIRST_VIEW_FILE = "px-first-view.html"
#: the JupyterLab extensions the app's page loads (the widget manager and bqplot's); others
#: installed beside them (plotly's, anywidget's ...) are not loaded into Voila's page
PAGE_EXTENSIONS = (
    "@jupyter-widgets/jupyterlab-manager",
    "@voila-dashboards/widgets-manager8",
    "bqplot",
    "bqscales",
)
#: The template Voila serves: Voila's lab template minus its CDN icon-font links, with the app's
#: preview written into the page.
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
    /* Voila shows the cells once its scripts have loaded; the app's preview shows at once */
    #rendered_cells:has(.px-preview) { display: block !important; }
    body:has(.px-preview) #loading { display: none !important; }
    /* the server's copy of the first view gives way to the notebook's own once that arrives */
    #rendered_cells:has([cell-index] .px-preview) .FIRST_VIEW_CLASS { display: none; }
  </style>
  {{ super.super() }}
{%- endblock notebook_css -%}
{#- The first view written beside this template by the server (FIRST_VIEW_FILE, see
    start_first_view), included before the notebook runs: it reaches the browser while the
    kernel starts.  Until it is written, or without it, nothing is included. -#}
{%- block body_header -%}
{{ super() }}
{%- include 'FIRST_VIEW_FILE' ignore missing -%}
{%- endblock body_header -%}
{#- The app's preview (explorer.App.preview_html, display metadata PREVIEW_METADATA) goes into
    the page as HTML, so it shows before Voila's scripts have loaded; every other output is
    left to them. -#}
{%- block data_priority scoped -%}
{%- set data = output.get("data", {}) if output else {} -%}
{%- if output and output.get("metadata", {}).get("PREVIEW_METADATA") and "text/html" in data -%}
  {{ data["text/html"] }}
{%- else -%}
  {{ super() }}
{%- endif -%}
{%- endblock data_priority -%}
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
    from explorer.app.first_view import FIRST_VIEW_CLASS, PREVIEW_METADATA

    template = _TEMPLATE
    for placeholder, value in (
        ("PREVIEW_METADATA", PREVIEW_METADATA),
        ("FIRST_VIEW_FILE", FIRST_VIEW_FILE),
        ("FIRST_VIEW_CLASS", FIRST_VIEW_CLASS),
    ):
        template = template.replace(placeholder, value)
    (folder / "index.html.j2").write_text(template)
    return base


def start_first_view(template_root: Path) -> subprocess.Popen[bytes]:
    """Start writing the app's first view beside the offline template under ``template_root``
    (``python -m explorer.app.preview``: the default app, built once without TensorFlow), for
    the template to include at the top of every page, before the notebook runs.

    Meant for the shipped notebook (``explorer.App()``, the default selection); it runs beside
    Voila's own start, and a page served before it is written has none (the notebook's preview
    comes with the notebook's output as before).
    """
    path = template_root / "voila" / "templates" / TEMPLATE_NAME / FIRST_VIEW_FILE
    return subprocess.Popen(
        [sys.executable, "-m", "explorer.app.preview", str(path)],
        stdout=subprocess.DEVNULL,
        env=voila_env(None),
    )


#: Kernels kept warm by a bare ``--preheat`` (they count towards ``--max-kernels``).
PREHEAT_POOL_SIZE = 2
#: Kernels kept warm without ``--preheat`` (none when ``--max-kernels 1``: the pool would take
#: the only slot): the first visitor gets a kernel that has already run the notebook.
DEFAULT_PREHEAT = 1
#: What the warm kernel holds in memory, MiB: the median PSS of the pooled kernel process
#: (``python -m benchmarks.bench_warm_kernel --write``, benchmarks/results/warm_kernel.md;
#: a test checks that the two agree).
WARM_KERNEL_PSS_MIB = 120
#: Seconds Voila waits before it replaces a pre-heated kernel a visitor took (Voila's default
#: is 1 s): the new kernel runs the notebook, which would compete for the CPU with that
#: visitor's page while it loads.
REFILL_DELAY_S = 10


def default_preheat(max_kernels: int) -> int:
    """Kernels kept warm when ``--preheat`` is not given: :data:`DEFAULT_PREHEAT`, or none when
    ``max_kernels`` leaves no room beside the pool.

    >>> default_preheat(40), default_preheat(1)
    (1, 0)
    """
    return DEFAULT_PREHEAT if max_kernels > DEFAULT_PREHEAT else 0


def check_limits(
    port: int, cull_idle_timeout: int, cull_interval: int, max_kernels: int, preheat: int = 0
) -> None:
    """ValueError (one line) unless the port and the limits make sense."""
    if not 0 < port < 65536:
        raise ValueError(f"port must be between 1 and 65535, got {port}")
    if cull_idle_timeout < 1 or cull_interval < 1:
        raise ValueError("cull_idle_timeout and cull_interval must be at least 1 second")
    if max_kernels < 1:
        raise ValueError(f"max_kernels must be at least 1, got {max_kernels}")
    if preheat < 0:
        raise ValueError(f"--preheat must be at least 0, got {preheat}")
    if preheat and max_kernels <= preheat:
        raise ValueError(
            f"--preheat keeps {preheat} kernels warm: max_kernels must be at least "
            f"{preheat + 1}, got {max_kernels}"
        )


def voila_command(
    notebook: Path,
    port: int,
    *,
    open_browser: bool = False,
    cull_idle_timeout: int = DEFAULT_CULL_IDLE_TIMEOUT,
    cull_interval: int = 60,
    preheat: int | None = None,
    offline_template: bool = True,
    max_kernels: int | None = None,
    allowed_hosts: Sequence[str] = (),
    connection_dir_root: Path | None = None,
    connect_grace: float = DEFAULT_CONNECT_GRACE_S,
    client_starts: int = DEFAULT_CLIENT_STARTS,
) -> list[str]:
    """The Voila command line for workshop mode on 127.0.0.1.

    ``max_kernels`` None means :func:`~explorer.server.limits.default_max_kernels`; ``preheat``
    None means :func:`default_preheat` (a pool of one warm kernel), 0 no pool;
    ``allowed_hosts`` are extra ``Host`` names to answer; ``connection_dir_root`` is where
    Voila keeps its connection files (the system temp dir when None).
    """
    from explorer.server.hosts import normalize_host_name

    kernels = default_max_kernels() if max_kernels is None else max_kernels
    preheat = default_preheat(kernels) if preheat is None else preheat
    check_limits(port, cull_idle_timeout, cull_interval, kernels, preheat)
    hosts = [normalize_host_name(name) for name in allowed_hosts]
    cmd = [
        sys.executable,
        "-m",
        "explorer.server.voila_main",
        str(notebook),
        f"--port={port}",
        "--Voila.ip=127.0.0.1",
        "--Voila.port_retries=0",
        # key=value and one option per list item: the forms traitlets 5 does not deprecate
        # (the value reaches tornado as the string "True", which is what its truth test needs)
        "--Voila.tornado_settings=disable_check_xsrf=True",
        f"--MappingKernelManager.cull_interval={cull_interval}",
        f"--MappingKernelManager.cull_idle_timeout={cull_idle_timeout}",
        "--MappingKernelManager.cull_connected=True",
        f"--CappedKernelManager.max_kernels={kernels}",
        f"--CappedKernelManager.connect_grace={connect_grace:g}",
        f"--CappedKernelManager.client_starts={client_starts}",
        *(f"--WorkshopVoila.allowed_hosts={name}" for name in hosts),
        "--VoilaExecutor.timeout=120",
        *(f"--VoilaConfiguration.extension_allowlist={name}" for name in PAGE_EXTENSIONS),
    ]
    if connection_dir_root is not None:
        cmd.append(f"--Voila.connection_dir_root={connection_dir_root}")
    if not open_browser:
        cmd.append("--no-browser")
    if preheat:
        cmd += [
            "--preheat_kernel=True",
            f"--pool_size={preheat}",
            f"--VoilaKernelManager.fill_delay={REFILL_DELAY_S}",
        ]
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


def training_slots(args: argparse.Namespace) -> int:
    """``--training-slots``, else ``$PX_TRAINING_SLOTS``, else the default (half the cores)."""
    from explorer.training.queue import configured_slots

    return int(args.training_slots) if args.training_slots is not None else configured_slots()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options."""
    from explorer.cli import add_json_argument, bounded_int
    from explorer.training.queue import MAX_SLOTS, SLOTS_ENV, default_slots

    parser.add_argument("--port", type=int, default=8866, help="port on 127.0.0.1 (default 8866)")
    parser.add_argument(
        "--notebook", type=Path, default=None, help="notebook to serve (default notebooks/explorer.ipynb)"
    )
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    parser.add_argument(
        "--cull-idle-timeout",
        type=int,
        default=DEFAULT_CULL_IDLE_TIMEOUT,
        help="seconds after which an idle visitor's kernel is shut down, tab open or not "
        f"(default {DEFAULT_CULL_IDLE_TIMEOUT}: a visitor reading a page for a while keeps it)",
    )
    parser.add_argument(
        "--cull-interval",
        type=int,
        default=60,
        help="seconds between two checks for idle kernels (default 60)",
    )
    parser.add_argument(
        "--max-kernels",
        type=int,
        default=None,
        metavar="N",
        help="most visitors (kernels, ~0.2 GB each without TensorFlow) at once; the next one gets a "
        f"'full' page (default: what 3/4 of the memory holds, at most 40; here {default_max_kernels()})",
    )
    parser.add_argument(
        "--connect-grace",
        type=float,
        default=DEFAULT_CONNECT_GRACE_S,
        metavar="SECONDS",
        help="a page's kernel whose websocket has not connected (a client running no JavaScript: "
        "curl, a link preview) is shut down after this many quiet seconds; only connected "
        f"visitors keep kernels (default {DEFAULT_CONNECT_GRACE_S:g})",
    )
    parser.add_argument(
        "--client-starts",
        type=int,
        default=DEFAULT_CLIENT_STARTS,
        metavar="N",
        help=f"most kernels one client address may start per {RATE_WINDOW_S:g} s; further page "
        f"loads get HTTP 429 (default {DEFAULT_CLIENT_STARTS}; 0: no limit, for a server behind a "
        "reverse proxy, where every visitor has the proxy's address)",
    )
    parser.add_argument(
        "--training-slots",
        type=bounded_int(1, MAX_SLOTS),
        default=None,
        metavar="K",
        help="most training runs (one worker process per policy) at once on this machine, for all "
        f"visitors together; the others queue (default ${SLOTS_ENV}, else half the cores: here "
        f"{default_slots()})",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests for this Host name (a workshop server behind a proxy); repeatable",
    )
    parser.add_argument(
        "--preheat",
        type=bounded_int(0, DEFAULT_MAX_KERNELS),
        nargs="?",
        const=PREHEAT_POOL_SIZE,
        default=None,
        metavar="N",
        help="keep N kernels that have already run the notebook, so that a visitor's page comes at "
        f"once; each is refilled as a visitor takes it, within --max-kernels (the pool counts "
        f"towards it). Without --preheat: {DEFAULT_PREHEAT} (none with --max-kernels 1), which "
        f"holds ~{WARM_KERNEL_PSS_MIB} MiB of memory (PSS, benchmarks/results/warm_kernel.md) while "
        f"nobody uses it; --preheat 0: no "
        f"pool, the first visitor waits for a kernel to start; a bare --preheat: "
        f"{PREHEAT_POOL_SIZE}. For a workshop: N = the expected room, --max-kernels a few more",
    )
    parser.add_argument(
        "--cdn-template",
        action="store_true",
        help="use Voila's stock template (loads its icon font from a CDN)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    add_json_argument(parser, "with --dry-run: the command and URL; a running server prints no JSON")


def check_options(args: argparse.Namespace) -> None:
    """ValueError (one line) for an option out of range, before anything is looked up or written."""
    from explorer.server.hosts import normalize_host_name

    max_kernels = default_max_kernels() if args.max_kernels is None else args.max_kernels
    preheat = default_preheat(max_kernels) if args.preheat is None else args.preheat
    check_limits(args.port, args.cull_idle_timeout, args.cull_interval, max_kernels, preheat)
    if not 0.5 <= args.connect_grace <= 3600:
        raise ValueError(f"--connect-grace must be 0.5 to 3600 seconds, got {args.connect_grace:g}")
    if args.client_starts < 0:
        raise ValueError(f"--client-starts must be 0 (no limit) or more, got {args.client_starts}")
    for name in args.allow_host:
        normalize_host_name(name)


def _command(args: argparse.Namespace, notebook: Path, connection_dir_root: Path | None) -> list[str]:
    return voila_command(
        notebook,
        args.port,
        open_browser=not args.no_browser,
        cull_idle_timeout=args.cull_idle_timeout,
        cull_interval=args.cull_interval,
        preheat=args.preheat,
        offline_template=not args.cdn_template,
        max_kernels=args.max_kernels,
        allowed_hosts=args.allow_host,
        connection_dir_root=connection_dir_root,
        connect_grace=args.connect_grace,
        client_starts=args.client_starts,
    )


def run(args: argparse.Namespace) -> int:
    """Start the server (or print its command with --dry-run); returns its exit status.

    Options are checked first (ValueError).  ``--dry-run`` writes nothing; a real run keeps
    the offline template and Voila's connection files in one ``px-voila-*`` temporary
    directory that is removed however the run ends.
    """
    from explorer.server.process_tree import LAUNCHER_DIR_ENV, LAUNCHER_DIR_PREFIX, LAUNCHER_ENV, supervise
    from explorer.training.queue import SLOTS_ENV

    check_options(args)
    # for every kernel; a bad $PX_TRAINING_SLOTS is a one-line error before anything starts
    kernel_env = {SLOTS_ENV: str(training_slots(args))}
    if args.json and not args.dry_run:
        raise ValueError("--json needs --dry-run: a running Voila server prints no JSON")
    notebook = Path(args.notebook) if args.notebook is not None else find_notebook()
    if not notebook.is_file():
        raise FileNotFoundError(f"notebook {notebook} not found")
    if args.dry_run:
        cmd = _command(args, notebook, None)
        if args.json:
            from explorer.cli import print_json

            print_json({"command": cmd, "url": f"http://127.0.0.1:{args.port}/", "env": kernel_env})
        else:
            print(shlex.join([f"{k}={v}" for k, v in kernel_env.items()] + cmd))
        return 0
    with tempfile.TemporaryDirectory(prefix=LAUNCHER_DIR_PREFIX, ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        template_root = None if args.cdn_template else write_offline_template(work)
        cmd = _command(args, notebook, work)
        # the first view is the default app's: only for the shipped notebook (explorer.App())
        writer = start_first_view(template_root) if template_root and args.notebook is None else None
        print(f"Serving {notebook} at http://127.0.0.1:{args.port}/ (Ctrl-C to stop)", flush=True)
        try:
            # Voila stops, and removes ``work``, if this process is killed
            launcher = {LAUNCHER_ENV: str(os.getpid()), LAUNCHER_DIR_ENV: str(work)}
            return supervise(cmd, env={**voila_env(template_root), **kernel_env, **launcher})
        finally:
            if writer is not None and writer.poll() is None:
                writer.kill()
                writer.wait()
