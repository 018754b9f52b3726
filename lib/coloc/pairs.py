"""Pairs (one row per unordered pair, columns ``*_a`` / ``*_b``) as directed rows: one row per job.

The one rule for every consumer (training labels, scores, the simulator's lookups): a pair
gives two rows, job a next to job b, then job b next to job a. A self-pair (a job type next
to itself) also gives two rows: its two jobs are two instances, each a sample. A table keyed
by (device, workload, other) holds the mean of the rows that share a key.
"""
from __future__ import annotations

import pandas as pd


def twin_columns(pairs: pd.DataFrame) -> list[str]:
    """Stems of the column twins ``<stem>_a`` / ``<stem>_b`` other than the job types."""
    return [c[:-2] for c in pairs.columns
            if c.endswith("_a") and f"{c[:-2]}_b" in pairs.columns and c != "workload_a"]


def directed(pairs: pd.DataFrame) -> pd.DataFrame:
    """Rows 0..n-1: job a (``workload``) next to job b (``other``); rows n..2n-1: job b next to job a.

    Every twin ``<stem>_a`` / ``<stem>_b`` becomes ``<stem>`` (the row job's value); other
    columns are repeated. The index is 0..2n-1.
    """
    for column in ("workload_a", "workload_b"):
        if column not in pairs.columns:
            raise KeyError(f"pairs table: missing column {column!r}; has {list(pairs.columns)}")
    stems = twin_columns(pairs)
    twins = {f"{s}_{side}" for s in stems for side in "ab"} | {"workload_a", "workload_b"}
    shared = [c for c in pairs.columns if c not in twins]
    halves = []
    for own, other in (("a", "b"), ("b", "a")):
        half = pairs[shared].reset_index(drop=True).copy()
        half["workload"] = pairs[f"workload_{own}"].to_numpy()
        half["other"] = pairs[f"workload_{other}"].to_numpy()
        for stem in stems:
            half[stem] = pairs[f"{stem}_{own}"].to_numpy()
        halves.append(half)
    return pd.concat(halves, ignore_index=True)


def keyed_mean(rows: pd.DataFrame, values, keys=("device", "workload", "other")) -> dict:
    """{(device, workload, other): value} for one value column, the mean of rows sharing a key;
    {key: (v1, v2, ...)} for several."""
    single = isinstance(values, str)
    columns = [values] if single else list(values)
    means = rows.groupby(list(keys), sort=True)[columns].mean()
    if single:
        return dict(zip(means.index, means[values].astype(float).tolist(), strict=True))
    return dict(zip(means.index, map(tuple, means.astype(float).to_numpy().tolist()), strict=True))
