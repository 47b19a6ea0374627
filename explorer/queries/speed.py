"""Is a low-precision dtype faster here?  The time per call of an op in a dtype relative to
float32 on the same backend, device, mode and shapes (:func:`speed`), measured in the sandbox's
workers (:mod:`explorer.runtime.speed`).

A row is one cell: its availability ``status`` (``ok``, ``fallback``, ``no_kernel`` ...), its
timing (median and quartiles, seconds per call), ``ratio_to_float32`` (its median over the
float32 median of the same group) with the interval of the ratio from the rounds that timed both
and a ``verdict`` (``faster``, ``slower``, ``undecided``; :mod:`explorer.analysis.paired_ratio`),
the machine's load and the CPU time the worker got while they were timed, and the intra-op
threads it ran with.  A cell is ``slow`` when its ratio is above
:data:`~explorer.analysis.speed.SLOW_RATIO` and its verdict is ``slower``; it can be ``ok`` and
``slow`` at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from explorer.analysis.paired_ratio import MachineState, machine_note
from explorer.analysis.speed import SLOW_RATIO, is_slow, ratio_to_baseline, workloads
from explorer.backends import get_backend, normalize_device
from explorer.formats import resolve
from explorer.ops import catalog, get_op
from explorer.runtime.sandbox import Sandbox
from explorer.runtime.speed import MAX_TIME, MIN_COUNT, MIN_TIME, Cell, measure_cells

#: the dtype every other dtype is compared with
BASELINE = "float32"
#: the backends timed when none is named
DEFAULT_BACKENDS: tuple[str, ...] = ("tensorflow", "torch", "jax")
#: the modes timed when none is named (``compile``, PyTorch's torch.compile, only when asked for:
#: every cell compiles afresh, seconds each)
DEFAULT_MODES: tuple[str, ...] = ("eager", "xla")
#: the fields of :class:`~explorer.analysis.paired_ratio.MachineState` a worker sends
MACHINE_FIELDS: tuple[str, ...] = (
    "load_before",
    "load_after",
    "cores",
    "wall_seconds",
    "cpu_seconds",
    "threads",
)
#: the dtypes timed when none is named
DEFAULT_DTYPES: tuple[str, ...] = ("float16", "bfloat16")


@dataclass
class SpeedRow:
    """One measured cell."""

    backend: str
    op: str
    #: the input shapes, e.g. ``"512x512,512x512"``
    shapes: str
    dtype: str
    device: str
    mode: str
    #: availability of the cell with these inputs (an :class:`explorer.outcome.Status` value)
    status: str
    #: seconds per call: median, quartiles, fastest and slowest sample (None when it did not run)
    median_seconds: float | None = None
    q1_seconds: float | None = None
    q3_seconds: float | None = None
    min_seconds: float | None = None
    max_seconds: float | None = None
    #: timing samples taken
    samples: int = 0
    #: the float32 median of the same backend, device, mode and shapes
    float32_median_seconds: float | None = None
    #: ``median_seconds / float32_median_seconds``
    ratio_to_float32: float | None = None
    #: the interval of the ratio (rounds that timed this dtype and float32), its confidence and
    #: the rounds; None when there is none (float32's own row, a cell timed alone, too few rounds)
    ratio_low: float | None = None
    ratio_high: float | None = None
    confidence: float | None = None
    rounds: int = 0
    #: ``faster``, ``slower`` or ``undecided`` than float32 (``baseline`` on float32's own row,
    #: ``""`` when the cell was not timed), and why when undecided
    verdict: str = ""
    verdict_reason: str = ""
    #: ratio above :data:`~explorer.analysis.speed.SLOW_RATIO` and verdict ``slower``
    slow: bool = False
    #: the 1-minute load average (the higher of before and after), the logical CPUs, and the CPU
    #: seconds the worker got per wall second, while the cell's rounds ran
    load: float | None = None
    cores: int | None = None
    cpu_share: float | None = None
    #: words when the machine was busy then (:func:`~explorer.analysis.paired_ratio.machine_note`)
    busy: str = ""
    #: the intra-op threads the framework ran with (None: not set, e.g. JAX's and NumPy's)
    threads: int | None = None
    #: the dtype the result came back in
    result_dtype: str | None = None
    #: the first call, compilation included (seconds)
    first_call_seconds: float | None = None
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        return asdict(self)


@dataclass
class SpeedResult:
    """The rows, and how much of what was asked for was measured."""

    rows: list[SpeedRow] = field(default_factory=list)
    #: cells asked for (float32 baselines included) and cells measured
    cells_planned: int = 0
    cells_measured: int = 0
    #: the budget (seconds; None: no budget) and the seconds the run took
    budget_seconds: float | None = None
    seconds: float = 0.0
    #: False when the budget ran out first
    complete: bool = True
    #: cells not timed because their framework is not installed (not counted as planned), and
    #: each missing framework in words (:func:`not_installed`)
    cells_not_installed: int = 0
    not_installed: list[str] = field(default_factory=list)

    def conditions(self) -> list[str]:
        """Lines on how the cells were timed: the intra-op threads, the load average, and in
        words when the machine was busy (the busiest cell's note).

        >>> row = SpeedRow("torch", "exp", "65536", "float16", "CPU", "eager", "ok", load=14.5, cores=2,
        ...                cpu_share=0.9, busy="the machine was busy while timing (load 14.5 on 2 cores)",
        ...                threads=1)
        >>> for line in SpeedResult(rows=[row]).conditions():
        ...     print(line)
        intra-op threads: torch 1
        load average 14.5 on 2 cores while timing
        1 of 1 timed cells: the machine was busy while timing (load 14.5 on 2 cores)
        """
        timed = [r for r in self.rows if r.load is not None]
        lines = []
        threads = dict.fromkeys(f"{r.backend} {r.threads}" for r in self.rows if r.threads is not None)
        if threads:
            lines.append("intra-op threads: " + ", ".join(threads))
        if timed:
            low, high = min(r.load or 0.0 for r in timed), max(r.load or 0.0 for r in timed)
            span = f"{high:.1f}" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f}"
            lines.append(f"load average {span} on {timed[0].cores} cores while timing")
        busy = [r for r in timed if r.busy]
        if busy:
            worst = max(busy, key=lambda r: r.load or 0.0)
            lines.append(f"{len(busy)} of {len(timed)} timed cells: {worst.busy}")
        return lines

    def coverage(self) -> str:
        """One line: how many cells were measured, in how long, within what budget.

        >>> run = SpeedResult(cells_planned=4, cells_measured=3, budget_seconds=60, seconds=59.2)
        >>> run.complete = False
        >>> run.coverage()
        'measured 3 of 4 cells in 59.2 s (budget 60 s; it ran out before the rest)'
        >>> print(SpeedResult(cells_not_installed=2, not_installed=[not_installed("torch")]).coverage())
        measured 0 of 0 cells in 0.0 s; 2 more not timed (PyTorch is not installed: pip install -e '.[torch]')
        """
        budget = "" if self.budget_seconds is None else f"budget {self.budget_seconds:g} s"
        tail = "" if self.complete else "; it ran out before the rest"
        inside = f" ({budget}{tail})" if budget or tail else ""
        line = f"measured {self.cells_measured} of {self.cells_planned} cells in {self.seconds:.1f} s{inside}"
        if self.cells_not_installed:
            line += f"; {self.cells_not_installed} more not timed ({'; '.join(self.not_installed)})"
        return line


def plan(
    ops: Sequence[str],
    dtypes: Sequence[str],
    backends: Sequence[str],
    modes: Sequence[str],
    device: str = "CPU",
) -> list[Cell]:
    """The cells to measure, float32 first in each group of backend, mode, op and shapes; modes a
    backend does not have are left out for it.  Bad names raise ValueError.

    >>> cells = plan(["exp"], ["float16"], ["torch"], ["eager", "xla"])
    >>> [(c.backend, c.mode, c.dtype, c.shapes) for c in cells]
    [('torch', 'eager', 'float32', ((65536,),)), ('torch', 'eager', 'float16', ((65536,),))]
    """
    device = normalize_device(device)
    names = list(dict.fromkeys([BASELINE, *(resolve(d).name for d in dtypes)]))
    cells: list[Cell] = []
    for backend_name in dict.fromkeys(get_backend(b).name for b in backends):
        backend = get_backend(backend_name)
        for mode in dict.fromkeys(modes):
            if mode not in backend.modes:
                continue
            for op_name in dict.fromkeys(get_op(o).name for o in ops):
                op = get_op(op_name)
                shapes = [tuple(x.shape) for x in op.inputs()]
                for load in workloads(op.name, op.elementwise, shapes):
                    cells.extend(Cell(backend_name, op.name, d, device, mode, load.shapes) for d in names)
    return cells


def speed(
    ops: Sequence[str] | None = None,
    dtypes: Sequence[str] = DEFAULT_DTYPES,
    backends: Sequence[str] = DEFAULT_BACKENDS,
    modes: Sequence[str] = DEFAULT_MODES,
    device: str = "CPU",
    budget: float | None = None,
    sandbox: Sandbox | None = None,
    min_time: float = MIN_TIME,
    min_count: int = MIN_COUNT,
    max_time: float = MAX_TIME,
    threads: int | None = None,
    on_row: Callable[[SpeedRow], None] | None = None,
) -> SpeedResult:
    """Time ``ops`` (default: the whole catalog) in ``dtypes`` and float32, per backend and mode;
    with ``budget`` (seconds) the run stops within it and the result says how far it got.
    ``threads``: PyTorch's and TensorFlow's intra-op threads in their workers (None:
    :data:`~explorer.runtime.speed.DEFAULT_THREADS`)."""
    if budget is not None and not budget > 0:
        raise ValueError(f"budget must be a positive number of seconds, got {budget!r}")
    planned = plan(list(ops) if ops else list(catalog()), dtypes, backends, modes, device)
    installed = {b: get_backend(b).is_installed() for b in dict.fromkeys(c.backend for c in planned)}
    cells = [c for c in planned if installed[c.backend]]
    baselines: dict[tuple[Any, ...], float | None] = {}
    result = SpeedResult(cells_planned=len(cells), budget_seconds=budget)
    result.cells_not_installed = len(planned) - len(cells)
    result.not_installed = [not_installed(b) for b, present in installed.items() if not present]

    def collect(cell: Cell, answer: dict[str, Any]) -> None:
        row = _row(cell, answer, baselines)
        result.rows.append(row)
        if on_row is not None:
            on_row(row)

    run = measure_cells(
        cells,
        sandbox=sandbox,
        budget=budget,
        min_time=min_time,
        min_count=min_count,
        max_time=max_time,
        threads=threads,
        on_cell=collect,
    )
    result.cells_measured = len(run.measured)
    result.seconds = run.seconds
    result.complete = run.complete
    return result


#: a framework's name in words and the install command of its extra (TensorFlow is a dependency
#: of the package itself)
FRAMEWORKS: dict[str, tuple[str, str]] = {
    "torch": ("PyTorch", "pip install -e '.[torch]'"),
    "jax": ("JAX", "pip install -e '.[jax]'"),
    "tensorflow": ("TensorFlow", "pip install -e ."),
}


def not_installed(backend: str) -> str:
    """A missing framework in words, with the command that installs it.

    >>> not_installed("jax")
    "JAX is not installed: pip install -e '.[jax]'"
    """
    name, command = FRAMEWORKS.get(backend, (backend, f"pip install {backend}"))
    return f"{name} is not installed: {command}"


def _group(cell: Cell) -> tuple[Any, ...]:
    return (cell.backend, cell.op, cell.device, cell.mode, cell.shapes)


def _row(cell: Cell, answer: dict[str, Any], baselines: dict[tuple[Any, ...], float | None]) -> SpeedRow:
    """A row from a worker's answer; float32's median is remembered for its group."""
    timing = answer.get("timing") or {}
    median = timing.get("median")
    if cell.dtype == BASELINE:
        baselines[_group(cell)] = median
    base = baselines.get(_group(cell))
    ratio = ratio_to_baseline(median, base)
    paired = answer.get("ratio") or {}
    machine = answer.get("machine") or {}
    threads_used = (answer.get("threads") or {}).get(cell.backend)
    if not timing:
        verdict, reason = "", ""
    elif cell.dtype == BASELINE:
        verdict, reason = "baseline", ""
    elif paired:
        verdict, reason = str(paired.get("verdict", "undecided")), str(paired.get("reason", ""))
    else:
        verdict, reason = "undecided", "not timed in the same rounds as float32"
    return SpeedRow(
        backend=cell.backend,
        op=cell.op,
        shapes=",".join("x".join(str(n) for n in s) or "scalar" for s in cell.shapes) or "catalog",
        dtype=cell.dtype,
        device=cell.device,
        mode=cell.mode,
        status=str(answer.get("status", "error")),
        median_seconds=median,
        q1_seconds=timing.get("q1"),
        q3_seconds=timing.get("q3"),
        min_seconds=timing.get("minimum"),
        max_seconds=timing.get("maximum"),
        samples=int(timing.get("count", 0)),
        float32_median_seconds=base,
        ratio_to_float32=ratio,
        ratio_low=paired.get("low"),
        ratio_high=paired.get("high"),
        confidence=paired.get("confidence"),
        rounds=int(paired.get("rounds") or 0),
        verdict=verdict,
        verdict_reason=reason,
        slow=is_slow(ratio, SLOW_RATIO) and verdict == "slower",
        load=machine.get("load"),
        cores=machine.get("cores"),
        cpu_share=machine.get("cpu_share"),
        busy=machine_note(MachineState(**{k: machine[k] for k in MACHINE_FIELDS})) if machine else "",
        threads=threads_used,
        result_dtype=answer.get("result_dtype"),
        first_call_seconds=answer.get("first_call_seconds"),
        error=str(answer.get("error") or ""),
    )
