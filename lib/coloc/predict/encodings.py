"""Training-pair encodings: what the training pairs say about a job and its co-runners.

From the directed training rows (device, job, co-runner, norm) of the training fold only:

* ``enc_sens_dev``: mean normalized throughput of the job on this device (its sensitivity),
* ``enc_aggr_dev``: mean normalized throughput of the jobs that ran next to the co-runner on
  this device (the co-runner's aggressiveness),
* ``enc_sens_all`` / ``enc_aggr_all``: the same over all devices,
* ``enc_pair_all``: mean normalized throughput of the job next to this co-runner on any device,
* ``enc_fam_dev``: mean normalized throughput of the job's family next to the co-runner's
  family on this device,

with ``enc_n_*`` counts; NaN where the training pairs say nothing (e.g. a held-out family);
``enc_near`` is a kernel average over the batch-size neighbours of the pair (same device and
family pair). For several co-runners the co-runner encodings are averaged. Training rows get
cross-fitted encodings (a row's encodings come from pairs of other folds, carved like the
protocol's test folds), so no row's encoding contains its own label, and training sees
encodings as incomplete as those of a new pair.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from coloc.datasets import family_of
from coloc.predict.base import feasible_rows
from coloc.predict.protocols import inner_folds
from coloc.workloads import AMP_SUFFIX

KEYS = {  # encoding -> (columns of the directed rows it groups by)
    "sens_dev": ("device", "workload"),
    "aggr_dev": ("device", "other"),
    "sens_all": ("workload",),
    "aggr_all": ("other",),
    "pair_all": ("workload", "other"),
    "fam_dev": ("device", "fam", "ofam"),
}


def directed_rows(pairs: pd.DataFrame) -> pd.DataFrame:
    """device, workload, other, norm, fam, ofam for the feasible pairs (both jobs: :func:`coloc.pairs.directed`)."""
    return _with_families(feasible_rows(pairs))


def _with_families(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.assign(fam=rows["workload"].map(family_of), ofam=rows["other"].map(family_of))


def encode(queries: pd.DataFrame, known: pd.DataFrame) -> pd.DataFrame:
    """Encodings of (job, co-runners) queries from the directed rows ``known``."""
    lengths = queries["co_runners"].map(len).to_numpy()
    flat = _with_families(pd.DataFrame({
        "query": np.repeat(np.arange(len(queries)), lengths),
        "device": np.repeat(queries["device"].to_numpy(), lengths),
        "workload": np.repeat(queries["workload"].to_numpy(), lengths),
        "other": [w for co in queries["co_runners"] for w in co],
    }))
    out = {}
    for name, keys in KEYS.items():
        stats = known.groupby(list(keys))["norm"].agg(["mean", "size"])
        idx = pd.MultiIndex.from_frame(flat[list(keys)]) if len(keys) > 1 else pd.Index(flat[keys[0]])
        found = stats.reindex(idx)
        out[f"enc_{name}"] = found["mean"].to_numpy()
        out[f"enc_n_{name}"] = found["size"].fillna(0).to_numpy()
    out["enc_near"], out["enc_w_near"] = _near(flat, known)
    per_pair = pd.DataFrame(out).assign(query=flat["query"].to_numpy())
    return per_pair.groupby("query").mean().reindex(range(len(queries))).set_index(queries.index)


def _log_batch(workloads: pd.Series) -> np.ndarray:
    """log2 of each job type's batch size (an -amp job type's: its FP32 job type's, zero doublings away)."""
    batch = workloads.str.removesuffix(AMP_SUFFIX).str.rsplit("-b", n=1).str[1]
    return np.log2(batch.astype(float).to_numpy())


def _near(flat: pd.DataFrame, known: pd.DataFrame, scale: float = 1.0):
    """Kernel average over training rows of the same device and family pair, weighted by
    exp(-(batch-size doublings between the jobs + between the co-runners) / scale)."""
    mean, weight = np.full(len(flat), np.nan), np.zeros(len(flat))
    if known.empty or flat.empty:
        return mean, weight
    kb, ko = _log_batch(known["workload"]), _log_batch(known["other"])
    qb, qo = _log_batch(flat["workload"]), _log_batch(flat["other"])
    groups = known.groupby(["device", "fam", "ofam"]).indices
    for key, rows in flat.groupby(["device", "fam", "ofam"]).indices.items():
        if key not in groups:
            continue
        k = groups[key]
        dist = np.abs(qb[rows, None] - kb[None, k]) + np.abs(qo[rows, None] - ko[None, k])
        w = np.exp(-dist / scale)
        weight[rows] = w.sum(1)
        mean[rows] = (w * known["norm"].to_numpy()[k]).sum(1) / weight[rows]
    return mean, weight


def cross_fitted(labels: pd.DataFrame, pairs: pd.DataFrame, seed: int, k: int = 5,
                 groups: str | None = None) -> pd.DataFrame:
    """Encodings of the training rows ``labels`` (from :func:`pair_labels` of ``pairs``), out-of-fold.

    ``labels`` must be ``pair_labels(pairs)``: rows i and i + n are the two jobs of feasible pair i.
    The folds mirror the protocol (``groups``: None, "family", "workload" or "device"; see
    :func:`coloc.predict.protocols.inner_folds`), so a training row's encodings are as incomplete
    as a test row's (e.g. under leave-one-family-out, a job's own-family encodings are missing).
    """
    feasible = pairs[pairs["feasible"].astype(bool)].reset_index(drop=True)
    n = len(feasible)
    if len(labels) != 2 * n:
        raise ValueError(f"encodings: {len(labels)} training rows for {n} feasible pairs; expected {2 * n}")
    if n < 2:
        return encode(labels, directed_rows(feasible).iloc[:0])
    rows = directed_rows(feasible)
    parts = []
    for fit_pairs, fill in inner_folds(feasible, groups, seed, k, "encoding-folds"):
        parts.append(encode(labels[fill], rows[np.concatenate([fit_pairs, fit_pairs])]))
    return pd.concat(parts).loc[labels.index]
