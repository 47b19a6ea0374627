"""The Kernels tab's words below and beside the heatmap: "every cell explained" (the selected op's
rows with their errors and workarounds, a table per panel, the declared/probed disagreements),
one clicked cell told in full, and the key of the statuses.  Pure formatting of rows the
queries answered; every string that reaches the markup is escaped."""

from __future__ import annotations

import html
from typing import Any

from explorer.app.render import table_html
from explorer.plots.availability import kernel_panels, styled_table
from explorer.plots.kernel_grid import KernelGrid, declared_by
from explorer.plots.palette import OUTLINE, STATUS_COLORS, STATUS_GLYPHS, text_color


def details_html(rows: Any, op: str) -> str:
    """Every cell of ``op`` explained (its rows, first error lines, workarounds, full errors), then
    a hover table per shown panel and the declared/probed disagreements of ``rows``."""
    mine = rows[rows["op"] == op]
    if mine.empty:
        mine = rows[rows["raw_op"].astype(str).str.split(",").apply(lambda r: op in r)]
    parts = [f"<h4>{html.escape(op)}: every cell explained</h4>"]
    if mine.empty:
        parts.append("<p>No rows for this op in the selection.</p>")
    else:
        parts.extend(_explained(mine.to_dict("records")))
    for backend, device, mode in kernel_panels(rows)[:4]:
        try:
            table = styled_table(rows, backend, device, mode).to_html()
        except ValueError:
            continue
        parts.append(
            f"<details><summary>{html.escape(f'{backend} · {device} · {mode}')}: table "
            f"(hover a cell for its error and workaround)</summary>{table}</details>"
        )
    if "disagreement" in rows:
        dis = rows[rows["disagreement"].astype(bool)]
        if len(dis):
            parts.append(f"<h4>Declared vs probed disagreements ({len(dis)})</h4>")
            parts.append(
                table_html(
                    dis[["backend", "op", "dtype", "device", "mode", "declared", "status", "disagreement"]]
                )
            )
    return "".join(parts)


def _explained(records: list[dict[str, Any]]) -> list[str]:
    """The op's rows as a table, its first workarounds and its first full errors."""
    cells = []
    for r in records:
        cells.append(
            {
                "backend": r["backend"],
                "raw_op": r["raw_op"],
                "dtype": r["dtype"],
                "device": r["device"],
                "mode": r["mode"],
                "status": r["status"],
                "explanation": r["explanation"],
                "error": str(r["error"] or "").strip().splitlines()[0][:240] if r["error"] else "",
            }
        )
    if not any(c["error"] for c in cells):  # a column of blanks only widens the table
        for c in cells:
            del c["error"]
    parts = [table_html(cells, max_rows=200)]
    workarounds = [r for r in records if r.get("workaround")]
    for r in workarounds[:6]:
        parts.append(
            f"<p><b>Workaround</b> for {_cell(r, 'backend', 'dtype', 'device', 'mode')}: "
            f"{html.escape(str(r.get('workaround_how') or ''))}</p>"
            f"<pre style='background:#f6f6f6;padding:6px'>{html.escape(str(r['workaround']))}</pre>"
        )
    errors = [r for r in records if r.get("error")]
    for r in errors[:3]:
        parts.append(
            f"<details><summary>full error {_cell(r, 'backend', 'dtype', 'mode')}</summary>"
            "<pre style='white-space:pre-wrap;font-size:85%'>"
            f"{html.escape(str(r['error']))}</pre></details>"
        )
    return parts


def _cell(row: dict[str, Any], *keys: str) -> str:
    return html.escape(" ".join(str(row[k]) for k in keys))


def status_key_html() -> str:
    """The key: each status's colour and glyph, and how a declared cell is marked.

    >>> "(+)" in status_key_html()
    True
    """
    items = "".join(
        f"<span style='display:inline-block;min-width:16px;text-align:center;background:{c};"
        f"color:{text_color(c)};margin:0 4px 0 10px;border:1px solid {OUTLINE};font-weight:bold'>"
        f"{html.escape(STATUS_GLYPHS[s])}</span>{html.escape(s)}"
        for s, c in STATUS_COLORS.items()
    )
    declared = (
        "<span style='margin-left:10px'><b>(+)</b> letter in brackets: declared by a registry, not run</span>"
    )
    return f"<div class='px-key' style='font-size:85%'>{items}{declared}</div>"


def cell_html(grid: KernelGrid, i: int, j: int) -> str:
    """One clicked cell: where it is, its status (declared or ran), and for every row behind it the
    explanation, the full error and the workaround (all escaped)."""
    column = grid.columns[j]
    status = grid.status(i, j)
    where = f"{grid.ops[i]} · {column.dtype} · {column.backend} · {column.panel_label}"
    how = f"declared by {declared_by(column.backend)}, not run here" if column.declared else "ran here"
    parts = [
        f"<div class='px-cell-details' style='border:1px solid {OUTLINE};padding:6px;margin:4px 0'>"
        f"<b>{html.escape(where)}</b>: "
        f"<span class='px-cell-status'>{html.escape(status or 'not asked for')}</span> ({html.escape(how)})"
    ]
    for r in grid.records(i, j)[:6]:
        raw = html.escape(str(r.get("raw_op") or ""))
        parts.append(f"<div class='px-cell-row'><i>{raw}</i> {html.escape(str(r.get('status') or ''))}")
        if r.get("explanation"):
            parts.append(f"<p class='px-cell-explanation'>{html.escape(str(r['explanation']))}</p>")
        if r.get("error"):
            parts.append(
                "<pre class='px-cell-error' style='white-space:pre-wrap;font-size:85%;max-height:240px;"
                f"overflow:auto'>{html.escape(str(r['error']))}</pre>"
            )
        if r.get("workaround"):
            parts.append(
                f"<p><b>Workaround</b>: {html.escape(str(r.get('workaround_how') or ''))}</p>"
                "<pre class='px-cell-workaround' style='background:#f6f6f6;padding:6px'>"
                f"{html.escape(str(r['workaround']))}</pre>"
            )
        parts.append("</div>")
    return "".join(parts) + "</div>"


def release_html(cell: Any, tested: dict[str, Any] | None = None, installed: str = "") -> str:
    """One cell in one TensorFlow release (a :class:`~explorer.queries.kernel_release.ReleaseCell`),
    told in the details panel: its status in words, the float dtypes that release registers
    on the device type, and the workaround — the one a probe ran on this machine (``tested``:
    its row, with ``workaround`` and ``workaround_how``) or else the catalogue's (all escaped).

    >>> from explorer.queries.kernel_release import release_cell
    >>> "create it in float32" in release_html(release_cell("range", "Range", "float16", "CPU", "2.17.1"))
    True
    """
    from explorer.plots.history import STATUS_MEANINGS

    esc = html.escape
    meaning = cell.reason or STATUS_MEANINGS.get(cell.status, cell.status)
    verdict = "has a kernel" if cell.status == "ok" else "has no kernel"
    parts = [
        f"<div class='px-release-details' style='border:1px solid {OUTLINE};padding:6px;margin:4px 0'>",
        f"<b>{esc(cell.title)}</b>: <span class='px-release-status'>{esc(cell.status)}</span>",
        f"<p>TensorFlow {esc(cell.version)} {verdict} for {esc(cell.raw_op)} in {esc(cell.dtype)} on "
        f"{esc(cell.device_type)}: {esc(meaning)}.</p>",
    ]
    if cell.registered:
        parts.append(
            f"<p class='px-release-dtypes'>Float dtypes with a {esc(cell.device_type)} kernel in "
            f"{esc(cell.version)}: {esc(', '.join(cell.registered))}.</p>"
        )
    elif cell.status != "absent" or "dtype" in cell.reason:
        parts.append(
            f"<p class='px-release-dtypes'>No float dtype has a {esc(cell.device_type)} kernel in "
            f"{esc(cell.version)}.</p>"
        )
    if cell.status != "ok":
        if tested and tested.get("workaround"):
            parts.append(
                f"<p><b>Workaround</b>, tested by a probe on this machine (TensorFlow {esc(installed)}): "
                f"{esc(str(tested.get('workaround_how') or ''))}</p>"
                f"<pre class='px-cell-workaround px-code'>{esc(str(tested['workaround']))}</pre>"
            )
        elif cell.workaround_how:
            parts.append(
                f"<p><b>Workaround</b> ({esc(cell.wide)} has a kernel in {esc(cell.version)}): "
                f"{esc(cell.workaround_how)}. From explorer's workaround catalogue; Probe now "
                "runs it on this machine.</p>"
                f"<pre class='px-cell-workaround px-code'>{esc(cell.workaround_code)}</pre>"
            )
        else:
            wide = "float64" if cell.dtype == "float32" else "float32"
            why = (
                "the catalogue has none for this raw op"
                if wide in cell.registered
                else f"{wide} has no kernel there either"
            )
            parts.append(f"<p class='px-release-none'>No workaround: {esc(why)}.</p>")
    return "".join(parts) + "</div>"
