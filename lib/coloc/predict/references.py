"""Reference co-runners: which known job types a new job is probed next to.

A probe runs the new job briefly next to one reference job type on a device and measures
both jobs' normalized throughputs. The references of a device are chosen from the
*training* pairs only (never from the new job's), by one stated criterion:

    greedy forward selection of the co-runners whose probe values best predict, by ridge
    least squares over the training job types, each job's log normalized throughput next to
    every other training job type, in both directions (the job next to c, and c next to the job).

For a training job j the *profile* is the row ``L[j, :]`` (j's log normalized throughput next
to each co-runner) and the column ``L[:, j]`` (each job's log normalized throughput next to
j) of the device's job x co-runner matrix ``L``. Probing j next to a reference r reveals
``L[j, r]`` and ``L[r, j]``. A set S is scored by the residual sum of squares of predicting the
rest of every training job's profile from its 2|S| revealed entries (a ridge fit with an
intercept per target; entries with no feasible training pair take their column's mean). Each
step adds the candidate with the smallest residual (ties: the first name), so the sets are
nested: the references of k = 2 are the first two of k = 3.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from coloc.predict.base import feasible_rows

RIDGE = 1e-3  # penalty of the selection's least-squares fits (standardized inputs)
# GPU seconds one probe takes (warm-up and a measured window of a co-located pair): the profiling
# cost of k probes is k x PROBE_WINDOW_S per device type. A stated assumption, not a measurement.
PROBE_WINDOW_S = 30.0


def log_matrix(pairs: pd.DataFrame, device: str, jobs=None) -> pd.DataFrame:
    """The device's matrix of mean log normalized throughput: rows the job, columns the co-runner
    (NaN where no feasible pair was measured). ``jobs``: its rows and columns (default: every job
    type in the device's feasible pairs, sorted)."""
    rows = feasible_rows(pairs[pairs["device"] == device])
    rows = rows.assign(log=np.log(np.maximum(rows["norm"].to_numpy(float), 1e-3)))
    matrix = rows.groupby(["workload", "other"])["log"].mean().unstack()
    jobs = sorted(set(rows["workload"]) | set(rows["other"])) if jobs is None else list(jobs)
    return matrix.reindex(index=jobs, columns=jobs)


def _profile_residual(profile: np.ndarray, revealed: list[int]) -> float:
    """Residual sum of squares of predicting the unrevealed columns of ``profile`` from the revealed ones."""
    x, rest = profile[:, revealed], np.delete(profile, revealed, axis=1)
    x = (x - x.mean(0)) / np.maximum(x.std(0), 1e-9)
    y = rest - rest.mean(0)
    coef = np.linalg.solve(x.T @ x + RIDGE * len(x) * np.eye(x.shape[1]), x.T @ y)
    return float(((y - x @ coef) ** 2).sum())


def choose_references(pairs: pd.DataFrame, device: str, k: int, candidates=None) -> tuple[str, ...]:
    """The ``k`` reference co-runners of ``device`` chosen from the training ``pairs`` (module docstring).

    ``candidates``: the job types it may choose (default: every job type in the device's
    feasible pairs). Fewer than ``k`` when fewer candidates exist.
    """
    if k < 0:
        raise ValueError(f"reference co-runners: k = {k}; expected k >= 0")
    matrix = log_matrix(pairs, device)
    if matrix.empty or k == 0:
        return ()
    jobs = list(matrix.index)
    candidates = sorted(set(jobs) if candidates is None else set(candidates) & set(jobs))
    values = matrix.to_numpy(float)
    values = np.where(np.isfinite(values), values, np.nanmean(values, axis=0, keepdims=True))
    values = np.where(np.isfinite(values), values, np.nanmean(values))
    profile = np.hstack([values, values.T])  # row j: L[j, :] then L[:, j]
    n = len(jobs)
    chosen: list[str] = []
    for _ in range(min(k, len(candidates))):
        best, best_rss = None, np.inf
        for name in candidates:
            if name in chosen:
                continue
            picked = [jobs.index(c) for c in [*chosen, name]]
            rss = _profile_residual(profile, picked + [n + i for i in picked])
            if rss < best_rss - 1e-12:
                best, best_rss = name, rss
        chosen.append(best)
    return tuple(chosen)
