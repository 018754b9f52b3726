"""The Philly-derived trace (``philly.csv``, config ``sources.philly``) as the ``trace`` table, with a job type
drawn for every job from a dataset's job types.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from coloc.datasets.tables import DataError, check_column

PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
ASSIGN_RULES = ("uniform", "gpu_time")
MAX_GPUS = 2**53  # GPUs of one job: whole numbers above this are not exact as floats (nor as the int64 column)


def load_philly(
    path: str | Path,
    workloads: Sequence[str],
    assign: str = "uniform",
    seed: int = 0,
    clusters: Sequence[str] | None = None,
    window: tuple[float, float] | None = None,
    max_jobs: int | None = None,
    workload_cost: pd.Series | None = None,
) -> pd.DataFrame:
    """The Philly-derived trace as the ``trace`` table, filtered, with a job type per job.

    ``submit_time`` counts seconds from the first submission of the whole
    trace; ``window`` = (start, end) keeps jobs submitted in [start, end) of
    those seconds, and ``submit_time`` is then re-based on the first kept job.
    ``max_jobs`` keeps the first jobs by submit time. Job types are drawn from
    ``workloads`` by the rule ``assign`` (see :func:`assign_workloads`).
    """
    path = Path(path)
    raw = _read_philly(path)
    trace = pd.DataFrame({
        "submit_time": (raw["timestamp"] - raw["timestamp"].min()).dt.total_seconds(),
        "duration": raw["duration"].astype(float),
        "num_gpus": raw["num_gpus"].astype(int),
        "gpu_time": raw["gpu_time"].astype(float),
        "cluster": raw["cluster"].astype(str),
    })
    trace = trace.sort_values("submit_time", kind="stable").reset_index(drop=True)
    if clusters:
        unknown = sorted(set(clusters) - set(trace["cluster"]))
        if unknown:
            raise DataError(f"{path}: clusters {unknown} not in the trace; it has {sorted(trace['cluster'].unique())}")
        trace = trace[trace["cluster"].isin(clusters)]
    if window is not None:
        start, end = window
        trace = trace[(trace["submit_time"] >= start) & (trace["submit_time"] < end)]
    if max_jobs is not None:
        trace = trace.head(max_jobs)
    if trace.empty:
        raise DataError(f"{path}: no job left after filtering (clusters={clusters}, window={window}, max_jobs={max_jobs})")
    trace = trace.reset_index(drop=True)
    trace["submit_time"] -= trace["submit_time"].iloc[0]
    trace.insert(0, "job_id", np.arange(len(trace)))
    trace["workload"] = assign_workloads(trace, workloads, assign, seed, workload_cost)
    return trace[["job_id", "submit_time", "duration", "num_gpus", "workload", "cluster"]]


def _read_philly(path: Path) -> pd.DataFrame:
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not a readable UTF-8 CSV ({type(err).__name__}: {err})") from err
    missing = [c for c in PHILLY_COLUMNS if c not in raw.columns]
    if missing:
        raise DataError(f"{path}: columns {missing} missing; expected {list(PHILLY_COLUMNS)}, found {list(raw.columns)}")
    out = pd.DataFrame({"cluster": raw["cluster"]})
    out["timestamp"] = pd.to_datetime(raw["timestamp"], errors="coerce", format="%Y-%m-%d %H:%M:%S")
    check_column(path, raw, out["timestamp"].isna(), "timestamp", "a time 'YYYY-MM-DD HH:MM:SS'")
    for column in ("duration", "num_gpus", "gpu_time"):
        out[column] = pd.to_numeric(raw[column], errors="coerce")
        check_column(path, raw, ~np.isfinite(out[column]), column, "a finite number")
        check_column(path, raw, out[column] <= 0, column, "a positive number")
    check_column(path, raw, out["num_gpus"] != out["num_gpus"].round(), "num_gpus", "a whole number")
    check_column(path, raw, out["num_gpus"] > MAX_GPUS, "num_gpus", f"at most {MAX_GPUS} GPUs")
    check_column(path, raw, raw["cluster"].str.strip() == "", "cluster", "a cluster name")
    return out



def assign_workloads(
    trace: pd.DataFrame,
    workloads: Sequence[str],
    rule: str,
    seed: int,
    workload_cost: pd.Series | None = None,
) -> np.ndarray:
    """A job type for every job of ``trace``, by a seeded rule.

    * ``uniform``: each job draws a job type uniformly at random (as Gavel does).
    * ``gpu_time``: the jobs are split into as many classes as there are
      workload-cost classes, by quantiles of their GPU time (duration x GPUs);
      the workloads are split the same way by ``workload_cost`` (for example
      seconds per iteration on the reference device); a job draws uniformly
      from the workloads of its class, so long jobs get heavy models (in the
      spirit of the Pollux artifact's assignment by GPU-time class).
    """
    names = sorted(workloads)
    if not names:
        raise DataError("assign_workloads: the list of workloads is empty")
    rng = np.random.default_rng(seed)
    if rule == "uniform":
        return rng.choice(np.array(names, dtype=object), size=len(trace))
    if rule != "gpu_time":
        raise DataError(f"assign_workloads: unknown rule {rule!r}; expected one of {ASSIGN_RULES}")
    if workload_cost is None:
        raise DataError("assign_workloads: rule 'gpu_time' needs workload_cost (cost per workload)")
    missing = [w for w in names if w not in workload_cost.index]
    if missing:
        raise DataError(f"assign_workloads: workload_cost lacks {missing}")
    n_classes = min(3, len(names))
    by_cost = sorted(names, key=lambda w: (workload_cost[w], w))
    groups = np.array_split(np.array(by_cost, dtype=object), n_classes)
    gpu_time = trace["duration"].to_numpy() * trace["num_gpus"].to_numpy()
    job_class = pd.qcut(pd.Series(gpu_time).rank(method="first"), n_classes, labels=False).to_numpy()
    out = np.empty(len(trace), dtype=object)
    for k, group in enumerate(groups):
        members = job_class == k
        out[members] = rng.choice(group, size=int(members.sum()))
    return out


def trace_from_philly(
    path: str | Path,
    solo: pd.DataFrame,
    *,
    assign: str,
    seed: int,
    reference_device: str,
    clusters: Sequence[str] | None = None,
    window: Sequence[float] | None = None,
    max_jobs: int | None = None,
) -> pd.DataFrame:
    """The trace table with job types drawn from the workloads measured on ``reference_device``.

    The workload cost used by the ``gpu_time`` rule is seconds per iteration
    (1 / solo throughput) on the reference device.
    """
    reference = solo.loc[solo["device"] == reference_device].set_index("workload")["throughput"]
    if reference.empty:
        raise DataError(f"solo table: no workload measured on reference device {reference_device!r}; "
                        f"it has {sorted(solo['device'].unique())}")
    return load_philly(
        path, sorted(reference.index), assign=assign, seed=seed, clusters=clusters or None,
        window=tuple(window) if window is not None else None, max_jobs=max_jobs, workload_cost=1.0 / reference,
    )

