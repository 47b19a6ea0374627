"""Which ``Host`` headers the workshop server answers: the guard against DNS rebinding.

A page on ``evil.example.com`` can point its own name at 127.0.0.1 and then talk to a
server on loopback as if it were same-origin; the one thing it cannot change is the
``Host`` header its requests carry.  So the server answers only the loopback names
(``127.0.0.1``, ``localhost``, ``[::1]``, with any port) and the names it was told to
accept (``--allow-host``, for a workshop server behind a reverse proxy).

Pure functions, no Jupyter import: the command line validates ``--allow-host`` with them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: Host names a loopback server always answers (compared without the port, lower case).
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})

#: ``name``, ``name:port``, ``[v6]`` or ``[v6]:port``.
_HOST_HEADER = re.compile(r"^(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[^\[\]:/\s]+))(?::(?P<port>\d{1,5}))?$")
#: An ``--allow-host`` value: a DNS name or IPv4 address (letters, digits, dots, dashes,
#: underscores), or an IPv6 address with or without brackets.
_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_.-]{0,251}[a-z0-9_])?$")
_V6 = re.compile(r"^\[?(?P<v6>[0-9a-f:.]*:[0-9a-f:.]*)\]?$")


def host_name(host_header: str) -> str | None:
    """The name in a ``Host`` header, lower case, without port or IPv6 brackets; None if malformed.

    >>> host_name("LocalHost:8866"), host_name("[::1]:8866"), host_name("127.0.0.1")
    ('localhost', '::1', '127.0.0.1')
    >>> host_name("evil.example.com:80"), host_name("a b"), host_name("x:port")
    ('evil.example.com', None, None)
    """
    match = _HOST_HEADER.match(host_header.strip().lower())
    if match is None:
        return None
    return match.group("v6") or match.group("name")


def host_allowed(host_header: str, extra_names: Iterable[str] = ()) -> bool:
    """Whether a request with this ``Host`` header may be served.

    ``extra_names`` are names already normalised by :func:`normalize_host_name`.

    >>> host_allowed("127.0.0.1:8866"), host_allowed("[::1]"), host_allowed("evil.example.com")
    (True, True, False)
    >>> host_allowed("workshop.lan:443", ["workshop.lan"]), host_allowed("127.0.0.2")
    (True, False)
    """
    name = host_name(host_header)
    return name is not None and (name in LOOPBACK_NAMES or name in set(extra_names))


def normalize_host_name(name: str) -> str:
    """An ``--allow-host`` value, lower case and without IPv6 brackets; ValueError if it is not a name.

    >>> normalize_host_name("Workshop.LAN"), normalize_host_name("[fe80::1]")
    ('workshop.lan', 'fe80::1')
    >>> normalize_host_name("evil.com:80")
    Traceback (most recent call last):
    ...
    ValueError: --allow-host takes a host name without port or scheme, got 'evil.com:80'
    """
    lowered = name.strip().lower()
    v6 = _V6.match(lowered)
    if v6 is not None and v6.group("v6").count(":") >= 2:
        return v6.group("v6")
    if _NAME.match(lowered) is None:
        raise ValueError(f"--allow-host takes a host name without port or scheme, got {name!r}")
    return lowered
