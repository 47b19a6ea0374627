"""Explain tab: paste an error text, get the op, dtype, device, what the releases say, and a fix.

The work is :func:`explorer.queries.diagnose.read_error` then :meth:`Reading.finish
<explorer.queries.diagnose.Reading.finish>`, in a background :class:`Job`: the reading (framework,
op, dtype, device, kind, the explanation) is shown as soon as it is read, the workaround section
saying that the workaround is being run and checked against the float64 reference; it fills in
when the job ends (running the workaround starts a sandbox worker).  The result is shown as HTML
in which every string that came from the pasted text or was derived from it is escaped.
"""

from __future__ import annotations

import contextlib
import html
from typing import Any

import ipywidgets as widgets

from explorer.app.jobs import Job, JobContext
from explorer.app.tab import Tab

#: what the text area shows before anything is pasted
PLACEHOLDER = (
    "Paste an error text or a whole traceback, e.g.\n"
    "NotFoundError: Could not find device for node: {{node Range}} = Range[Tidx=DT_HALF]\n"
    "RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'"
)


def _e(value: Any) -> str:
    """Escaped text of any value (None as an em dash)."""
    return "—" if value is None or value == "" else html.escape(str(value), quote=True)


def _row(label: str, value: str) -> str:
    style = "text-align:left;padding-right:12px;vertical-align:top"
    return f"<tr><th style='{style}'>{_e(label)}</th><td>{value}</td></tr>"


def _kernels_html(result: dict[str, Any]) -> str:
    per_device: dict[str, list[str]] = {}
    for kernel in result["listed_kernels"]:
        values = [t for v in kernel["constraints"].values() for t in v] or ["any dtype"]
        per_device.setdefault(kernel["device"], []).extend(values)
    return "<br>".join(f"{_e(d)}: {_e(', '.join(dict.fromkeys(v)))}" for d, v in per_device.items())


def _matches_html(m: dict[str, Any]) -> str:
    from explorer.analysis.error_explanation import releases_text

    if m["exact"]:
        return "exactly the kernels of " + _e(releases_text(m["exact"]))
    if not m["closest"]:
        return "no shipped release has this op"
    closest = m["closest"][0] + (f" to {m['closest'][-1]}" if len(m["closest"]) > 1 else "")
    among = f"no exact match among {m['compared']} shipped releases"
    return _e(f"{among}; closest: {closest} ({m['differences']} differences)")


def history_colors(status: str) -> tuple[str, str]:
    """The background of a release-history cell of ``status`` (``HISTORY_COLORS``, the colours of
    the release history everywhere) and the text colour with the higher contrast on it.

    >>> history_colors("no_kernel")
    ('#cc0000', '#ffffff')
    """
    from explorer.plots.history import HISTORY_COLORS
    from explorer.plots.palette import UNKNOWN_COLOR, text_color

    background = HISTORY_COLORS.get(status, UNKNOWN_COLOR)
    return background, text_color(background)


def _history_html(result: dict[str, Any]) -> str:
    """One chip per release in a strip that wraps (a table row ran off the panel at 1024 px).

    >>> strip = _history_html({"history": [{"version": "2.18.0", "status": "ok", "reason": ""}]})
    >>> strip.startswith("<div class='px-explain-history'>"), ">2.18.0<br>ok</span>" in strip
    (True, True)
    """
    cells: list[str] = []
    for h in result["history"]:
        background, ink = history_colors(str(h["status"]))
        cells.append(
            f"<span class='px-explain-chip' title='{_e(h['reason'] or h['status'])}' "
            f"style='color:{ink};background:{background}'>{_e(h['version'])}<br>{_e(h['status'])}</span>"
        )
    return f"<div class='px-explain-history'>{''.join(cells)}</div>"


def code_block(code: str, extra_class: str = "") -> str:
    """``code`` in a monospace block that a click or tap selects whole (CSS ``user-select: all``:
    no script in the page), ready to copy; escaped.

    >>> code_block("x = a < b")
    "<pre class='px-code ' title='click to select all of it, then copy'>x = a &lt; b</pre>"
    """
    return f"<pre class='px-code {extra_class}' title='click to select all of it, then copy'>{_e(code)}</pre>"


def result_html(result: dict[str, Any]) -> str:
    """The diagnose result as HTML: labelled facts, the explanation, the workaround code in a <pre>.

    >>> "&lt;img" in result_html({"recognised": False, "explanation": "<img src=x>", "looked_for": []})
    True
    """
    if not result["recognised"]:
        items = "".join(f"<li>{_e(line)}</li>" for line in result.get("looked_for", []))
        reason = result["explanation"].split(" Looked for:")[0]
        return (
            "<div class='px-explain-result px-explain-unrecognised'>"
            f"<p><b>Not recognised.</b> {_e(reason)}</p><p>Looked for:</p><ul>{items}</ul></div>"
        )
    rows = [
        _row("error", f"<code>{_e(result['message'])}</code>"),
        _row("framework", _e(f"{result['framework']} ({result['kind']})")),
        _row("op", f"<b>{_e(result['op'] or 'no catalog op')}</b> ({_e(result['raw_op'])})"),
        _row("dtype", f"<b>{_e(result['dtype'])}</b> ({_e(result['dtype_text'])})"),
        _row("device", _e(result["device"])),
    ]
    from explorer.queries.explain_kinds import extra_facts

    rows += [_row(label, _e(value)) for label, value in extra_facts(result)]
    if result["listed_kernels"]:
        rows.append(_row("kernels listed", _kernels_html(result)))
    if result["matching_releases"]:
        rows.append(_row("matching releases", _matches_html(result["matching_releases"])))
    if result["history"]:
        first = result["first_release_with_kernel"] or "none"
        rows.append(
            _row(
                f"history ({result['history_device']})",
                _history_html(result) + f"first release with a kernel: <b>{_e(first)}</b>",
            )
        )
    installed = result["installed"]
    status = installed.get("status") or installed.get("note")
    said = f"{installed['framework']} {installed['release'] or 'not installed'}"
    rows.append(_row("installed", _e(f"{said}: {status}" if status else said)))
    for note in result["notes"]:
        rows.append(_row("note", _e(note)))
    parts = [
        "<div class='px-explain-result'>",
        f"<table class='px-explain-facts'>{''.join(rows)}</table>",
        f"<p class='px-explain-explanation'>{_e(result['explanation'])}</p>",
    ]
    parts += workaround_html(result["workaround"])
    parts.append("</div>")
    return "".join(parts)


def check_html(work: dict[str, Any]) -> str:
    """The workaround's check, shown beside its code: passed or failed with its figure (max error
    in ulps of the target dtype against the float64 reference, and the tolerance), or "not
    checked" and why; escaped.

    >>> check_html({"check": {"status": "not checked", "summary": "not checked: <no op>"}})
    "<p class='px-explain-check px-check-not-checked'><b>Check:</b> not checked: &lt;no op&gt;</p>"
    """
    check = work.get("check") or {}
    status = str(check.get("status") or "not checked")
    summary = str(check.get("summary") or "not checked: no check was made")
    said = f"{status}: {summary}" if status in ("passed", "failed") else summary
    return f"<p class='px-explain-check px-check-{_e(status.replace(' ', '-'))}'><b>Check:</b> {_e(said)}</p>"


def workaround_html(work: dict[str, Any]) -> list[str]:
    """The workaround section: while it runs, a line saying so; then what it does, its check
    against the float64 reference, and its code (the lesson first, the runnable whole folded)."""
    if work.get("pending"):
        from explorer.queries.diagnose import PENDING

        return [f"<p class='px-explain-pending'><b>Workaround:</b> {_e(PENDING)}</p>"]
    if not work["code"]:
        return [f"<p><b>No workaround:</b> {_e(work['note'])}</p>"]
    how = f"ran here, returned {work['result_dtype']}" if work["ran"] else work["note"]
    parts = [f"<p><b>Workaround:</b> {_e(work['description'])} ({_e(how)})</p>", check_html(work)]
    from explorer.runtime.workarounds import lesson_code

    short = work.get("lesson") or lesson_code(work["code"])
    if work.get("lesson_from"):
        parts.append(
            "<p class='px-explain-lesson-from'>Your line "
            f"<code>{_e(work['lesson_from'])}</code>, with the fix (a click on the code selects "
            "all of it, to copy):</p>"
        )
    parts.append(code_block(short, "px-explain-code"))
    if short != work["code"]:
        parts.append(
            "<details class='px-explain-full'><summary>the same with the example inputs it ran "
            f"on (runnable as is)</summary>{code_block(work['code'])}</details>"
        )
    return parts


class ExplainTab(Tab):
    """A text area for an error text, an Explain button, and the explanation."""

    title = "Explain"
    key = "explain"
    fields: tuple[str, ...] = ()
    intro = (
        "Explain my error: paste a TensorFlow, Keras, PyTorch, JAX, XLA or ONNX Runtime error text to see "
        "which op, dtype and device "
        "it is about, which TensorFlow releases list the kernels it lists, the first release with the "
        "kernel, and a workaround that was run here."
    )

    def build(self) -> None:
        self.text = widgets.Textarea(
            value="", placeholder=PLACEHOLDER, layout=widgets.Layout(width="100%", height="160px")
        )
        self.text.add_class("px-explain-text")
        self.button = widgets.Button(
            description="Explain", button_style="info", tooltip="read the text and explain it"
        )
        self.button.add_class("px-explain-button")
        self.button.on_click(lambda _: self.explain())
        self.run_workaround = widgets.Checkbox(
            value=True, description="run the workaround here", indent=False
        )
        self.run_workaround.add_class("px-explain-run")
        self.working = widgets.Label("").add_class("px-explain-working")
        self.toolbar.layout = widgets.Layout(flex_flow="column", width="100%")
        self.toolbar.add_class("px-explain-toolbar")
        self.toolbar.children = [self.text, widgets.HBox([self.button, self.run_workaround, self.working])]
        self.export_bar.layout.display = "none"  # this tab draws no figure
        self.result: dict[str, Any] | None = None
        self.failure = ""
        self.job: Job | None = None

    def explain(self, wait: bool = False) -> Job | None:
        """Explain the text in the text area in the background (``wait``: until it is shown): the
        reading is shown as soon as it is read, the workaround when it was run and checked.

        Returns the job, or None when one is already running (the click is ignored).
        """
        if self.job is not None and self.job.running:
            return None
        text, run = self.text.value, bool(self.run_workaround.value)
        self.button.disabled = True
        self.working.value = (
            "working… (running the workaround starts a sandbox worker)" if run else "working…"
        )

        def work(ctx: JobContext) -> dict[str, Any]:
            from explorer.queries.diagnose import read_error

            reading = read_error(text)
            if run and reading.result["recognised"]:
                ctx.emit(reading.result)
                ctx.progress(0.5, "read; running the workaround")
            return reading.finish(run_workaround=run)

        self.job = Job("explain", work)
        self.job.on_progress(self._read)
        self.job.on_done(self._done)
        self.job.start()
        if wait:
            with contextlib.suppress(RuntimeError):  # a failure is shown in the tab
                self.job.wait()
        return self.job

    def _read(self, job: Job) -> None:
        """The reading is ready: show it, the workaround section saying it is being run."""
        if not job.records or job is not self.job:
            return
        self.result = job.records[-1]
        self.failure = ""
        self.working.value = "read; running the workaround and checking it…"
        self.dirty = True
        self.refresh()

    def _done(self, job: Job) -> None:
        self.button.disabled = False
        self.working.value = ""
        self.result = job.result if job.status == "done" else None
        self.failure = "" if job.status == "done" else (job.error or job.status)
        self.dirty = True
        self.refresh()

    def render(self) -> None:
        if self.failure:
            self.show_html("")
            self.show_message(f"The text could not be explained: {self.failure}", "warning")
            return
        if self.result is None:
            self.show_html("")
            self.show_message("Paste an error text above and press Explain.", "info")
            return
        self.show_html(result_html(self.result))
