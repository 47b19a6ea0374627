"""JupyterHub on one machine: every attendee lands on the Precision Explorer app (Voila).

Run from anywhere (paths below are resolved from this file)::

    PX_HUB_PASSWORD='a shared secret' jupyterhub -f deploy/jupyterhub/jupyterhub_config.py

What this sets up (JupyterHub 5+; checked with 6.1.1, jupyterhub-idle-culler 2.0):

- login: ``shared-password`` (JupyterHub's SharedPasswordAuthenticator): any user name that
  matches :data:`USERNAME_PATTERN`, one password for everyone (``PX_HUB_PASSWORD``, 8
  characters at least).  Anyone with the password can log in as any name, so as anyone else.
- each user's server: ``jupyterhub-singleuser`` (a Jupyter server with Voila's server
  extension), started by :class:`DataLimitedLocalSpawner` in ``PX_HUB_USERS_DIR/<name>``,
  where ``explorer.ipynb`` is copied before every start.  Its default page is
  ``/user/<name>/voila/render/explorer.ipynb``, the app.
- Voila inside it: the offline template (no CDN font), a 120 s cell timeout, and kernels
  culled after ``PX_HUB_KERNEL_CULL_TIMEOUT`` idle seconds, tab open or not.
- idle servers: stopped by ``jupyterhub-idle-culler`` (a hub-managed service with only the
  scopes it needs) after ``PX_HUB_CULL_TIMEOUT`` seconds without activity.
- limits (see the README's table for what is enforced): ``PX_HUB_MEM_LIMIT`` becomes
  ``RLIMIT_DATA`` of the user's server and, inherited, of each of its kernels — per process,
  not per user; ``PX_HUB_CPU_LIMIT`` is *not* enforced by a local spawner, it only sizes the
  thread pools (``OMP_NUM_THREADS``, TensorFlow's ``TF_NUM_*_THREADS``).

Every user's server runs as the hub's own Unix user (no per-user accounts): users are kept
apart by the hub's login and the per-server OAuth check, not by the operating system.  A
kernel runs whatever code its user sends, so a hub started as root gives every attendee
root; it refuses to start as root unless ``PX_HUB_ALLOW_ROOT=1``.

Environment variables (defaults in brackets):

=============================  ==================================================================
PX_HUB_PASSWORD                shared password for every attendee (required, >= 8 characters)
PX_HUB_IP [127.0.0.1]          address the public proxy listens on (0.0.0.0: every interface)
PX_HUB_PORT [8000]             public port
PX_HUB_BASE_URL [/]            URL prefix of the whole hub
PX_HUB_API_PORT [8081]         hub's own port on 127.0.0.1 (for the proxy and the servers)
PX_HUB_PROXY_API_PORT [8001]   configurable-http-proxy's REST API port on 127.0.0.1
PX_HUB_STATE_DIR               sqlite db, cookie secret, proxy pid file, Voila template
  [/srv/precision-explorer-hub/state]
PX_HUB_USERS_DIR               one working directory per user (its HOME)
  [/srv/precision-explorer-hub/users]
PX_HUB_NOTEBOOK                the app notebook copied to each user
  [notebooks/explorer.ipynb of this checkout]
PX_HUB_CULL_TIMEOUT [3600]     seconds of inactivity before a user's server is stopped
PX_HUB_CULL_EVERY [60]         seconds between two culler passes
PX_HUB_ACTIVITY_INTERVAL [60]  seconds between activity reports (proxy poll, server -> hub)
PX_HUB_KERNEL_CULL_TIMEOUT     seconds of inactivity before a kernel (one app page) is shut down
  [900]
PX_HUB_KERNEL_CULL_INTERVAL    seconds between two kernel-culling passes
  [60]
PX_HUB_MEM_LIMIT [2G]          RLIMIT_DATA per process of a user's server (0: none)
PX_HUB_CPU_LIMIT [1]           CPU count per user: thread-pool size (not enforced)
PX_HUB_START_TIMEOUT [120]     seconds a server may take to start
PX_HUB_ALLOW_ROOT [0]          1: allow running as root (every attendee's code then runs as root)
=============================  ==================================================================
"""

from __future__ import annotations

import math
import os
import re
import resource
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jupyterhub.spawner import SimpleLocalProcessSpawner

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

#: User names admitted at login: they become directory names, so no dots, slashes or spaces.
USERNAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,31}$"
#: The notebook's name in each user's directory; the default URL renders it.
APP_NOTEBOOK = "explorer.ipynb"
#: Seconds a notebook cell may run while Voila renders the page (as ``precision-explorer app``).
VOILA_CELL_TIMEOUT_S = 120
#: Name of the culler service (the role below is granted to it by this name).
CULLER_SERVICE = "jupyterhub-idle-culler-service"


def env_int(name: str, default: int, minimum: int = 1) -> int:
    """``$name`` as an integer >= ``minimum`` (``default`` when unset); ValueError naming it otherwise."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def env_str(name: str, default: str) -> str:
    """``$name`` stripped, or ``default`` when unset or empty."""
    return os.environ.get(name, "").strip() or default


def shared_password() -> str:
    """The attendees' password; ValueError when missing or shorter than JupyterHub's 8 characters."""
    password = os.environ.get("PX_HUB_PASSWORD", "")
    if len(password) < 8:
        raise ValueError("set PX_HUB_PASSWORD to the attendees' shared password (8 characters or more)")
    return password


def base_url() -> str:
    """``PX_HUB_BASE_URL`` with one leading and one trailing slash."""
    raw = env_str("PX_HUB_BASE_URL", "/")
    if not re.fullmatch(r"[A-Za-z0-9/_.-]*", raw):
        raise ValueError(f"PX_HUB_BASE_URL may hold letters, digits and / _ . - only, got {raw!r}")
    return "/" + "/".join(part for part in raw.split("/") if part) + ("/" if raw.strip("/") else "")


def refuse_root_unless_allowed() -> None:
    """RuntimeError when running as root without ``PX_HUB_ALLOW_ROOT=1`` (see the module doc)."""
    if hasattr(os, "geteuid") and os.geteuid() == 0 and os.environ.get("PX_HUB_ALLOW_ROOT") != "1":
        raise RuntimeError(
            "refusing to run as root: every attendee's kernel would run code as root. Run the hub as "
            "an unprivileged user, or set PX_HUB_ALLOW_ROOT=1 for a throwaway machine."
        )


class DataLimitedLocalSpawner(SimpleLocalProcessSpawner):
    """SimpleLocalProcessSpawner that also sets ``RLIMIT_DATA`` to ``mem_limit`` in the child.

    The limit is per process: the single-user server gets it and each kernel inherits it
    (each kernel may use up to ``mem_limit`` of heap and anonymous mappings; the user's
    total is not capped).  A kernel that reaches it gets ``MemoryError`` (or dies, when the
    allocation fails in C++), the machine does not run out.  ``RLIMIT_DATA`` rather than
    ``RLIMIT_AS``: importing TensorFlow alone reserves ~1.9 GB of address space (VmSize)
    for ~0.5 GB of data (VmData), so an address-space cap would break imports first.
    """

    def make_preexec_fn(self, name: str) -> Callable[[], None]:
        """SimpleLocalProcessSpawner's preexec (make and enter the home dir), then the data limit."""
        parent = super().make_preexec_fn(name)
        limit = int(self.mem_limit or 0)

        def preexec() -> None:
            parent()
            if limit > 0:
                resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

        return preexec


def prepare_user_dir(spawner: Any) -> None:
    """``pre_spawn_hook``: create the user's directory and put a fresh copy of the app there."""
    home = Path(spawner.home_dir)
    home.mkdir(mode=0o755, parents=True, exist_ok=True)
    target = home / APP_NOTEBOOK
    if target.exists():
        target.chmod(0o644)
    shutil.copyfile(app_notebook(), target)
    target.chmod(0o444)  # the app is rendered, not edited; a fresh copy comes with every start


def app_notebook() -> Path:
    """``PX_HUB_NOTEBOOK`` or this checkout's ``notebooks/explorer.ipynb``; FileNotFoundError if absent."""
    path = Path(env_str("PX_HUB_NOTEBOOK", str(REPO / "notebooks" / APP_NOTEBOOK)))
    if not path.is_file():
        raise FileNotFoundError(f"the app notebook {path} does not exist (set PX_HUB_NOTEBOOK)")
    return path


def offline_template(state_dir: Path, first_view: bool) -> tuple[Path, str]:
    """The Voila template without CDN links (``precision-explorer app``'s), written under ``state_dir``,
    with the default app's first view beside it when ``first_view`` (for the shipped notebook:
    each page then shows it before the user's kernel has started).

    Returns the data directory to put on ``JUPYTER_PATH`` and the template's name.
    """
    from explorer.cli.app import TEMPLATE_NAME, start_first_view, write_offline_template

    root = write_offline_template(state_dir / "voila-share")
    if first_view and start_first_view(root).wait(timeout=120) != 0:
        print("jupyterhub_config: the first view was not written; pages come without it", file=sys.stderr)
    return root, TEMPLATE_NAME


def singleuser_args(kernel_cull_timeout: int, kernel_cull_interval: int, template: str) -> list[str]:
    """Options of each user's Jupyter server: Voila's template, timeout and page extensions,
    kernel culling."""
    from explorer.cli.app import PAGE_EXTENSIONS

    args = [
        f"--VoilaConfiguration.template={template}",
        f"--VoilaConfiguration.extension_allowlist={list(PAGE_EXTENSIONS)!r}",
        f"--VoilaExecutor.timeout={VOILA_CELL_TIMEOUT_S}",
        # a page left open or closed abruptly keeps its kernel until it has been idle this long
        f"--MappingKernelManager.cull_idle_timeout={kernel_cull_timeout}",
        f"--MappingKernelManager.cull_interval={kernel_cull_interval}",
        "--MappingKernelManager.cull_connected=True",
        "--ServerApp.terminals_enabled=False",
        # no MathJax from cdnjs: Voila's server extension defaults to it, standalone Voila does not
        "--ServerApp.tornado_settings={'mathjax_url': None, 'mathjax_config': None}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--ServerApp.allow_root=True")
    return args


def thread_environment(cpu_limit: float) -> dict[str, str]:
    """Thread-pool sizes for ``cpu_limit`` CPUs (OpenMP/PyTorch, TensorFlow); no CPU time is capped."""
    threads = str(max(1, math.ceil(cpu_limit)))
    return {
        "OMP_NUM_THREADS": threads,
        "TF_NUM_INTRAOP_THREADS": threads,
        "TF_NUM_INTEROP_THREADS": threads,
    }


# ------------------------------------------------------------------------------------ the config

c = get_config()  # type: ignore[name-defined]  # noqa: F821  (defined by JupyterHub's config loader)

refuse_root_unless_allowed()
STATE_DIR = Path(env_str("PX_HUB_STATE_DIR", "/srv/precision-explorer-hub/state")).resolve()
USERS_DIR = Path(env_str("PX_HUB_USERS_DIR", "/srv/precision-explorer-hub/users")).resolve()
STATE_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
USERS_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
app_notebook()  # fail at start, not at the first login

# where the hub listens; the proxy and the hub's API stay on loopback
public_ip = env_str("PX_HUB_IP", "127.0.0.1")
c.JupyterHub.bind_url = f"http://{public_ip}:{env_int('PX_HUB_PORT', 8000)}{base_url()}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{env_int('PX_HUB_API_PORT', 8081)}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{env_int('PX_HUB_PROXY_API_PORT', 8001)}"
c.ConfigurableHTTPProxy.pid_file = str(STATE_DIR / "jupyterhub-proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE_DIR / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE_DIR / "jupyterhub_cookie_secret")
activity_interval = env_int("PX_HUB_ACTIVITY_INTERVAL", 60)
c.JupyterHub.last_activity_interval = activity_interval  # how often the proxy's activity is read

# login: one shared password, safe user names
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = shared_password()
c.Authenticator.allow_all = True
c.Authenticator.username_pattern = USERNAME_PATTERN

# each user's server: the app as the default page, limits, Voila's settings
mem_limit = env_str("PX_HUB_MEM_LIMIT", "2G")
cpu_limit = float(env_str("PX_HUB_CPU_LIMIT", "1"))
if not cpu_limit > 0:
    raise ValueError(f"PX_HUB_CPU_LIMIT must be positive, got {cpu_limit}")
template_root, template_name = offline_template(STATE_DIR, first_view="PX_HUB_NOTEBOOK" not in os.environ)
c.JupyterHub.spawner_class = DataLimitedLocalSpawner
c.SimpleLocalProcessSpawner.home_dir_template = str(USERS_DIR / "{username}")
c.Spawner.notebook_dir = str(USERS_DIR / "{username}")
c.Spawner.pre_spawn_hook = prepare_user_dir
c.Spawner.default_url = f"/voila/render/{APP_NOTEBOOK}"
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.args = singleuser_args(
    env_int("PX_HUB_KERNEL_CULL_TIMEOUT", 900),
    env_int("PX_HUB_KERNEL_CULL_INTERVAL", 60),
    template_name,
)
c.Spawner.mem_limit = None if mem_limit == "0" else mem_limit
c.Spawner.cpu_limit = cpu_limit
c.Spawner.start_timeout = env_int("PX_HUB_START_TIMEOUT", 120)
c.Spawner.http_timeout = env_int("PX_HUB_START_TIMEOUT", 120)
# LocalProcessSpawner's list, plus TMPDIR (so a hub given a private temp dir passes it on)
c.Spawner.env_keep = [
    *("CONDA_DEFAULT_ENV", "CONDA_ROOT", "JUPYTERHUB_SINGLEUSER_APP", "LANG", "LC_ALL"),
    *("LD_LIBRARY_PATH", "PATH", "PYTHONPATH", "VIRTUAL_ENV", "TMPDIR"),
]
c.Spawner.environment = {
    "JUPYTER_PATH": str(template_root),
    "JUPYTERHUB_ACTIVITY_INTERVAL": str(activity_interval),  # server -> hub activity reports
    "TF_CPP_MIN_LOG_LEVEL": "2",
    **thread_environment(cpu_limit),
}

# idle servers: stopped by the culler, a hub-managed service with only the scopes it needs
c.JupyterHub.load_roles = [
    {
        "name": "jupyterhub-idle-culler-role",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": [CULLER_SERVICE],
    }
]
c.JupyterHub.services = [
    {
        "name": CULLER_SERVICE,
        "command": [
            sys.executable,
            "-m",
            "jupyterhub_idle_culler",
            f"--timeout={env_int('PX_HUB_CULL_TIMEOUT', 3600)}",
            f"--cull-every={env_int('PX_HUB_CULL_EVERY', 60)}",
        ],
    }
]
