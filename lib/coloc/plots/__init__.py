"""Figures, one module per pipeline stage (``data``, ``features``, ``profiling``, ``predictors``,
``simulation``), one function per figure returning its matplotlib Figure; :func:`save` writes it.

No backend is chosen here: a notebook kernel shows figures inline (the executed notebooks keep them),
headless scripts and tests get matplotlib's non-interactive default (tests set ``MPLBACKEND=Agg``).
Every figure names its data source, device and, where it applies, protocol.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.backends import BackendFilter, backend_registry

GAVEL_SOURCE = "Gavel simulation_throughputs.json (measured)"
PHILLY_SOURCE = "Philly trace (Microsoft, via the Pollux artifact)"


def save(fig: plt.Figure, path: str | Path, dpi: int = 120) -> Path:
    """Write ``fig`` to ``path`` (folders created); close it unless a notebook will show it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    if not _shows_figures():
        plt.close(fig)
    return path


def _shows_figures() -> bool:
    """Whether the backend displays figures (a notebook's inline backend or a GUI), not only files (Agg)."""
    return matplotlib.get_backend().lower() not in backend_registry.list_builtin(BackendFilter.NON_INTERACTIVE)
