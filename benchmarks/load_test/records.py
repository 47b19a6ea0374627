"""What is recorded per visitor and per interaction (the report's ``visitors`` list, as dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Interaction:
    action: str  #: "tab:<key>" or "op:<name>"
    target: str  #: the tab whose view should update
    view_s: float | None = None
    reply_s: float | None = None
    echo_s: float | None = None
    view_has_content: bool | None = None
    #: whether widgets inside the tab were redrawn (light clients; None for browsers)
    redrawn: bool | None = None
    #: MIME types of the target tab's plot output afterwards (light clients)
    plot_mimes: list[str] = field(default_factory=list)
    error: str = ""


@dataclass
class Visitor:
    index: int
    kind: str  #: "browser" or "light"
    arrival_s: float = 0.0  #: planned arrival, seconds after the first
    started_s: float | None = None  #: actual start, seconds after the run started
    http_status: int | None = None
    page_s: float | None = None
    first_view_s: float | None = None
    kernel_id: str | None = None
    kernel_pid: int | None = None
    kernel_rss_mib: float | None = None
    kernel_tensorflow: bool | None = None
    interactions: list[Interaction] = field(default_factory=list)
    initial_op: str | None = None
    final_op: str | None = None
    app_errors_shown: int = 0
    failure: str | None = None
    failure_detail: str = ""
    interacted_s: float | None = None  #: when its interactions ended, seconds after the run started
    closed_by_server: bool = False

    def fail(self, kind: str, detail: str = "") -> None:
        if self.failure is None:
            self.failure, self.failure_detail = kind, detail[:500]
