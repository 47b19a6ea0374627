"""Plots of what TensorFlow's kernel registry declares.

Pure functions of :func:`explorer.analysis.registry_summary.device_summary`'s table.
No pyplot: figures are ``matplotlib.figure.Figure``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.plots._layout import stacked_axes

#: prefix and suffix of the summary's count columns (``"ops with a GPU kernel"``)
COUNT_PREFIX, COUNT_SUFFIX = "ops with a ", " kernel"


def plot_kernel_counts(summary: Any) -> Any:
    """Grouped bars: per dtype, how many TensorFlow ops have a kernel on each registry device type.

    ``summary`` has a ``dtype`` column and one ``ops with a <device> kernel`` column per
    device type; returns the Figure.

    >>> import pandas as pd
    >>> summary = pd.DataFrame([{"dtype": "float16", "ops with a CPU kernel": 3, "ops with a GPU kernel": 5}])
    >>> [t.get_text() for t in plot_kernel_counts(summary).axes[0].get_xticklabels()]
    ['CPU', 'GPU']
    """
    from matplotlib.figure import Figure

    columns = [c for c in summary.columns if c.startswith(COUNT_PREFIX)]
    devices = [c.removeprefix(COUNT_PREFIX).removesuffix(COUNT_SUFFIX) for c in columns]
    fig = Figure(figsize=(8.0, 3.0))
    (ax,) = stacked_axes(fig, [2.0], left=0.9, right=0.3, top=0.4, bottom=0.6)
    width = 0.8 / max(len(summary), 1)
    x = np.arange(len(devices))
    for i, row in enumerate(summary.to_dict("records")):
        values = [row[c] for c in columns]
        bars = ax.bar(x + (i - (len(summary) - 1) / 2) * width, values, width, label=row["dtype"])
        ax.bar_label(bars, fontsize=7)
    ax.set_xticks(x, devices, fontsize=8)
    ax.set_ylabel("ops with a kernel", fontsize=8)
    ax.set_title(
        "TensorFlow's kernel registry: ops with a kernel per device type (read without a GPU)", fontsize=9
    )
    ax.legend(fontsize=7)
    return fig
