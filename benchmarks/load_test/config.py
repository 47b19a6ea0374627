"""What one run is: its options (:class:`Config`), their bounds, what each visitor does, and which
arrivals are real browsers."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

#: Most visitors one run may simulate.
MAX_VISITORS = 60
#: Most real-browser visitors (each is a Chromium context: far heavier than a light client).
MAX_BROWSERS = 6
#: Longest --deadline accepted (seconds).
MAX_DEADLINE_S = 3600
#: With --preheat: kernels the pool may start again, beyond the visitors, as they take pooled ones.
POOL_REFILLS = 2
#: The tabs each visitor opens, in order, then the op change (on the Kernels tab).
TAB_SEQUENCE = [("ranges", "Ranges"), ("accuracy", "Accuracy"), ("bits", "Bits"), ("kernels", "Kernels")]


@dataclass
class Config:
    visitors: int = 10
    browsers: int = 2
    arrival_interval: float | None = None
    arrive_over: float = 60.0
    after: str = "stay"
    deadline: float = 900.0
    cull_idle_timeout: int = 90
    cull_interval: int = 5
    cull_bound: float | None = None
    max_kernels: int | None = None
    preheat: int = 0
    op: str = "exp"
    notebook: Path | None = None
    page_timeout: float = 240.0
    view_timeout: float = 180.0
    interaction_timeout: float = 120.0
    min_available_gib: float = 4.0

    def interval(self) -> float:
        if self.arrival_interval is not None:
            return self.arrival_interval
        return self.arrive_over / (self.visitors - 1) if self.visitors > 1 else 0.0

    def bound(self) -> float:
        if self.cull_bound is not None:
            return self.cull_bound
        return self.cull_idle_timeout + 3 * self.cull_interval + 60.0

    def check(self) -> None:
        """ValueError (one line) unless the options make sense."""
        if not 1 <= self.visitors <= MAX_VISITORS:
            raise ValueError(f"--visitors must be between 1 and {MAX_VISITORS}, got {self.visitors}")
        if not 0 <= self.browsers <= min(MAX_BROWSERS, self.visitors):
            raise ValueError(f"--browsers must be between 0 and min({MAX_BROWSERS}, --visitors)")
        if self.arrival_interval is not None and not 0 <= self.arrival_interval <= 60:
            raise ValueError("--arrival-interval must be between 0 and 60 seconds")
        if not 0 <= self.arrive_over <= 600:
            raise ValueError("--arrive-over must be between 0 and 600 seconds")
        if self.after not in ("stay", "leave"):
            raise ValueError("--after must be stay or leave")
        if not 10 <= self.deadline <= MAX_DEADLINE_S:
            raise ValueError(f"--deadline must be between 10 and {MAX_DEADLINE_S} seconds")
        if self.cull_idle_timeout < 1 or self.cull_interval < 1:
            raise ValueError("--cull-idle-timeout and --cull-interval must be at least 1 second")
        if self.max_kernels is not None and self.max_kernels < 1:
            raise ValueError("--max-kernels must be at least 1")
        if not 0 <= self.preheat <= MAX_VISITORS:
            raise ValueError(f"--preheat must be between 0 and {MAX_VISITORS}")
        if not re.fullmatch(r"[A-Za-z0-9_]{1,64}", self.op):
            raise ValueError("--op must be a catalog op name")

    def kernel_cap(self) -> int:
        """The server's --max-kernels: as given, else one per visitor, plus, with a pool,
        :data:`POOL_REFILLS` for the kernels the pool may start again as visitors take them."""
        if self.max_kernels is not None:
            return self.max_kernels
        return max(self.visitors, self.preheat) + (POOL_REFILLS if self.preheat else 0)


def browser_slots(visitors: int, browsers: int) -> set[int]:
    """Which arrival positions are browsers: spread over the arrival order.

    >>> sorted(browser_slots(10, 2)), sorted(browser_slots(3, 0)), sorted(browser_slots(2, 2))
    ([0, 5], [], [0, 1])
    """
    return {math.floor(i * visitors / browsers) for i in range(browsers)} if browsers else set()
