"""The canonical tables' shared helpers: the error every parser raises, the bound on a normalized throughput,
a workload's family, the pairs' summary, and writing a table.

Every check that fails raises :class:`DataError` naming the file, the row or key, and what was expected.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

# Most a job may gain from sharing its GPU: co-located over solo throughput above this is refused as
# a broken measurement (Gavel's largest is 1.0; the margin leaves room for measurement noise).
MAX_NORM = 1.5


class DataError(ValueError):
    """Input data does not have the expected shape or values."""


def family_of(workload: str) -> str:
    """The model family of a workload id: the text before the first '-'."""
    return workload.split("-", 1)[0]


def check_column(path: Path, raw: pd.DataFrame, bad: pd.Series, column: str, expected: str) -> None:
    """Refuse the rows ``bad`` of ``raw`` (read from ``path``): the first one named by its row and line, its
    ``column``'s value and what was ``expected``."""
    if bad.any():
        first = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(
            f"{path}: row {first + 2} (line {first + 2} of the file), column {column!r}: "
            f"got {raw[column].iloc[first]!r}, expected {expected} ({int(bad.sum())} such rows)"
        )


def pair_summary(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per device: unordered pairs, infeasible pairs, and the spread of normalized throughput."""
    norms = pd.concat([pairs[["device", "norm_a"]].rename(columns={"norm_a": "norm"}),
                       pairs[["device", "norm_b"]].rename(columns={"norm_b": "norm"})])
    spread = norms.groupby("device")["norm"].describe()[["mean", "min", "50%", "max"]]
    counts = pairs.groupby("device").agg(pairs=("feasible", "size"), infeasible=("feasible", lambda s: int((~s).sum())))
    return counts.join(spread.add_prefix("norm_"))


def save_table(table: pd.DataFrame, path: str | Path) -> Path:
    """Write a canonical table as Parquet (folders created, no index)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_parquet(path, index=False)
    return path

