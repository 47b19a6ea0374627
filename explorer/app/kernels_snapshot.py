"""The Kernels tab's snapshot bar: load a snapshot saved on another machine (``precision-explorer
kernels --save``, or Save snapshot) to show it instead of this machine's rows, go back, and save
the shown rows.  Reading, checking and writing are :mod:`explorer.queries.snapshot`'s."""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from explorer.app.render import message_html
from explorer.app.tab import NotAvailableYet
from explorer.textsafety import strip_control

if TYPE_CHECKING:
    from explorer.app.context import AppContext
    from explorer.queries.availability_result import AvailabilityResult


class SnapshotPanel:
    """Load / back / save buttons, the line saying which snapshot is shown, and that snapshot.

    ``shown_result()`` gives the rows to save; ``on_change()`` is called when the snapshot shown
    changes (the tab redraws); ``on_error(exc, context)`` shows a failed upload.
    """

    def __init__(
        self,
        ctx: AppContext,
        shown_result: Callable[[], AvailabilityResult],
        on_change: Callable[[], None],
        on_error: Callable[[BaseException, str], None],
    ) -> None:
        self.ctx = ctx
        self.state = ctx.state
        self._shown_result = shown_result
        self._on_change = on_change
        self._on_error = on_error
        #: the snapshot shown (an AvailabilityResult), None for this machine's rows
        self.snapshot: Any = None
        self.upload = self._new_upload()
        self.use_local = widgets.Button(description="Back to this machine", disabled=True)
        self.use_local.add_class("px-snapshot-clear")
        self.use_local.on_click(lambda _: self.clear())
        self.label = widgets.HTML("")
        self.save_button = widgets.Button(
            description="Save snapshot",
            tooltip="download the shown rows (registry + probed) with this machine's "
            "environment, to load on another machine",
        )
        self.save_button.add_class("px-snapshot-save")
        self.save_button.on_click(lambda _: self._offer())
        self.save_link = widgets.HTML("").add_class("px-snapshot-link")
        self.bar = widgets.HBox([self.upload, self.use_local, self.save_button, self.save_link])

    # ------------------------------------------------------------------ saving

    def snapshot_bytes(self) -> bytes:
        """The shown ops × dtypes (registry rows and cached probes) as a snapshot JSON, with this
        machine's environment (``precision-explorer kernels --load`` and the app read it)."""
        from explorer.queries import snapshot

        result = self._shown_result()
        with tempfile.TemporaryDirectory() as tmp:
            path = snapshot.save_snapshot(result, Path(tmp) / "snapshot.json")
            return Path(path).read_bytes()

    def _offer(self) -> None:
        from explorer.app.render import download_link, error_message

        try:
            data = self.snapshot_bytes()
        except Exception as exc:
            self.save_link.value = message_html(error_message(exc, "could not save a snapshot"), "warning")
            return
        name = f"kernels-{self.state.op}-{self.state.device}.json"
        self.save_link.value = download_link(data, name, "application/json")

    # ------------------------------------------------------------------ loading

    def _new_upload(self) -> widgets.FileUpload:
        """A fresh upload button.  Each upload gets a new one: resetting ``value`` from Python does
        not reach the page (ipywidgets drops a kernel update of a value the page has just sent), so
        the page kept the old file and the same file uploaded again changed nothing."""
        upload = widgets.FileUpload(
            accept=".json",
            multiple=False,
            description="Load snapshot",
            tooltip="load a kernels snapshot (.json) saved on another machine with Save snapshot "
            "or precision-explorer kernels --save",
        )
        upload.add_class("px-snapshot-upload")
        upload.observe(self._uploaded, names="value")
        return upload

    def _replace_upload(self) -> None:
        old, self.upload = self.upload, self._new_upload()
        self.bar.children = tuple(self.upload if c is old else c for c in self.bar.children)
        old.unobserve(self._uploaded, names="value")
        old.close()

    def _uploaded(self, change: dict[str, Any]) -> None:
        files = change["new"]
        if not files:
            return
        item = files[0]
        name = strip_control(Path(str(item.get("name") or "snapshot.json")).name)[:200] or "snapshot.json"
        try:
            from explorer.queries.snapshot import parse_snapshot

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = parse_snapshot(bytes(item.get("content", b"")), name)
            self.show(result, name, [str(w.message) for w in caught])
        except Exception as exc:
            self._on_error(exc, f"could not load {name}")
        finally:
            self._replace_upload()  # uploading the same file again is a new upload

    def load_file(self, path: str | Path, name: str | None = None) -> None:
        """Show a snapshot JSON saved on another machine (``precision-explorer kernels --save``);
        the file is only read."""
        from explorer.queries.snapshot import load_snapshot

        shown = name or Path(path).name
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = load_snapshot(path)
            except (ValueError, OSError) as exc:  # name the user's file, not where it was stored
                text = str(exc).replace(str(path), shown).replace(str(Path(path).parent), "")
                raise ValueError(text) from None
        notes = [str(w.message).replace(str(path), shown) for w in caught]
        self.show(result, shown, notes)

    def show(self, result: Any, name: str, notes: list[str] | None = None) -> None:
        """Show a checked snapshot (an AvailabilityResult) instead of this machine's results."""
        self.snapshot = result
        self.ctx.snapshot = result
        self.ctx.snapshot_name = name
        self.label.value = message_html(
            f"Showing snapshot {name}: {len(result.rows)} rows; {environment_summary(result.environment)}."
            + "".join(f" {note}" for note in notes or []),
            "info",
        )
        self.use_local.disabled = False
        self._on_change()

    def clear(self) -> None:
        """Go back to this machine's results."""
        self.snapshot = None
        self.ctx.snapshot = None
        self.ctx.snapshot_name = ""
        self.label.value = ""
        self.use_local.disabled = True
        self._on_change()

    def selected_rows(self, ops: list[str]) -> Any:
        """The snapshot's rows of ``ops`` × the selected dtypes, in the selected mode (and device,
        for a probed mode); NotAvailableYet naming what the snapshot has when there are none."""
        rows = self.snapshot.rows
        sel = rows[rows["op"].isin(set(ops)) & rows["dtype"].isin(self.state.dtypes)]
        if self.state.mode != "registry":
            sel = sel[(sel["mode"] == self.state.mode) & (sel["device"] == self.state.device)]
        else:
            sel = sel[sel["mode"] == "registry"]
        if sel.empty:
            have = sorted(set(zip(rows["device"], rows["mode"], strict=True)))
            raise NotAvailableYet(
                f"The snapshot has no rows for {self.state.op}'s ops in {', '.join(self.state.dtypes)} "
                f"({self.state.device}, {self.state.mode}); it has device/mode: "
                + ", ".join(f"{d}/{m}" for d, m in have)
            )
        return sel


def environment_summary(env: dict[str, Any]) -> str:
    """``"tensorflow 2.21.0, numpy 2.4.6; devices CPU:0, GPU:0"`` from a snapshot's environment
    (plain text: the caller escapes it).

    >>> environment_summary({"versions": {"numpy": "2.4.6", "torch": None}})
    'numpy 2.4.6'
    """
    versions = env.get("versions")
    named = [f"{k} {v}" for k, v in versions.items() if v is not None] if isinstance(versions, dict) else []
    if not named and env.get("tf_version"):
        named = [f"tensorflow {env['tf_version']}"]
    devices = env.get("devices")
    names = devices.get("tensorflow") if isinstance(devices, dict) else None
    where = ", ".join(str(d).removeprefix("/device:") for d in names[:8]) if isinstance(names, list) else ""
    text = ", ".join(named[:6]) or "versions not recorded"
    return strip_control(text + (f"; devices {where}" if where else ""))[:400]
