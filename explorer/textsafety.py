"""Text that is safe to print to a terminal: no control characters from untrusted data.

A snapshot, a cache file or an error text can carry terminal escape sequences
(``"\\x1b]0;pwned\\x07"`` sets the window title; others move the cursor, rewrite
lines or, on some terminals, do worse).  :func:`strip_control` removes them before
such text is printed.  Pure and dependency-free, so every layer can use it.
"""

from __future__ import annotations

import re

#: C0 controls, DEL, C1 controls, and the Unicode bidirectional overrides/isolates
#: that can make printed text read differently from what it is ("Trojan source")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: the same, without newline and tab
_CONTROL_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_WHITESPACE_CONTROL = re.compile("[\t\n\r\x0b\x0c]")


def strip_control(text: str, keep_newlines: bool = False) -> str:
    """``text`` without control characters, ready to print to a terminal.

    Tab, newline, carriage return, vertical tab and form feed become a space; every
    other C0/C1 control character, DEL and the Unicode bidi controls are removed.
    With ``keep_newlines`` (for long texts such as error messages printed on their own
    lines), newline and tab are kept as they are; the rest is removed as before.
    Anything that is not a ``str`` is converted with ``str()`` first.

    >>> strip_control("ok\\x1b]0;pwned\\x07 done")
    'ok]0;pwned done'
    >>> strip_control("line one\\nline two")
    'line one line two'
    >>> strip_control("line one\\r\\nline\\ttwo\\x1b[2J", keep_newlines=True)
    'line one\\nline\\ttwo[2J'
    """
    if not isinstance(text, str):
        text = str(text)
    if keep_newlines:
        return _CONTROL_KEEP_LINES.sub("", text)
    return _CONTROL.sub("", _WHITESPACE_CONTROL.sub(" ", text))


__all__ = ["strip_control"]
