"""One interface for co-location predictors, the tables they see, and the registry.

A predictor is fitted on :class:`Tables` (``workloads``, ``solo``, training ``pairs``,
``devices``) and predicts, for queries (device, job type, co-runners), each job's
co-located normalized throughput (co-located / solo iterations per second), with a
spread (``pred_std``) where it has one and NaN otherwise.

Queries are a DataFrame with columns ``device``, ``workload`` and ``co_runners`` (a tuple
of job types sharing the device with ``workload``). Infeasible pairs (``feasible``
False: they did not fit on the device) are never regression targets.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
import pandas as pd


QUERY_COLUMNS = ("device", "workload", "co_runners")


class InsufficientData(ValueError):
    """The training tables are too small for this predictor (the evaluation skips it, saying why)."""


@dataclass(frozen=True)
class Tables:
    """The tables a predictor sees: job features, solo throughputs, pairs, device specs."""

    workloads: pd.DataFrame  # the workloads contract, one row per job type
    solo: pd.DataFrame  # device, workload, throughput
    pairs: pd.DataFrame  # device, workload_a, workload_b, tput_a, tput_b, norm_a, norm_b, feasible
    devices: pd.DataFrame  # coloc.devices table (name, kind, peak_flops, ...)
    # Frames derived from workloads, solo and devices only (never from pairs), computed once
    # (e.g. the per-job frame of coloc.predict.inputs); shared by with_pairs().
    cache: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        _require(self.workloads, ("workload", "family", "batch_size"), "workloads")
        _require(self.solo, ("device", "workload", "throughput"), "solo")
        _require(self.pairs, ("device", "workload_a", "workload_b", "norm_a", "norm_b", "feasible"), "pairs")
        _require(self.devices, ("name", "peak_flops"), "devices")

    def check_covers(self, devices, workloads, what: str) -> None:
        """Raise KeyError naming the devices / job types that have no row in these tables."""
        missing_w = sorted(set(workloads) - set(self.workloads["workload"]))
        if missing_w:
            raise KeyError(f"{what}: job types {missing_w[:5]} have no row in the workloads table")
        missing_d = sorted(set(devices) - set(self.devices["name"]))
        if missing_d:
            raise KeyError(f"{what}: devices {missing_d} have no row in the device table")

    def with_pairs(self, pairs: pd.DataFrame) -> "Tables":
        """The same job types, solo rows and devices with other pairs (the cache is shared)."""
        return Tables(self.workloads, self.solo, pairs, self.devices, self.cache)

    def subset(self, pairs: pd.DataFrame, workloads=None, devices=None) -> "Tables":
        """Training tables: these pairs, and only the given job types and devices everywhere."""
        if workloads is None and devices is None:
            return self.with_pairs(pairs.reset_index(drop=True))
        wl = self.workloads if workloads is None else self.workloads[self.workloads["workload"].isin(workloads)]
        dev = self.devices if devices is None else self.devices[self.devices["name"].isin(devices)]
        keep = self.solo["workload"].isin(wl["workload"]) & self.solo["device"].isin(dev["name"])
        ok = (pairs["device"].isin(dev["name"]) & pairs["workload_a"].isin(wl["workload"])
              & pairs["workload_b"].isin(wl["workload"]))
        return Tables(wl.reset_index(drop=True), self.solo[keep].reset_index(drop=True),
                      pairs[ok].reset_index(drop=True), dev.reset_index(drop=True))


def _require(frame: pd.DataFrame, columns, name: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise KeyError(f"{name} table: missing columns {missing}; has {list(frame.columns)}")


class Predictor(ABC):
    """Predicts co-located normalized throughput. Subclasses set ``name`` and ``has_spread``."""

    name: str = ""
    has_spread: bool = False
    # Set by the evaluation: None (random validation split), "family", "workload" or "device" (hold out one
    # group of the training fold, as the protocol's test fold does). Used by predictors that early-stop.
    validation_groups: str | None = None

    def __init__(self, seed: int = 0):
        self.seed = int(seed)

    @abstractmethod
    def fit(self, train: Tables) -> "Predictor":
        """Fit on the training tables only; returns self."""

    @abstractmethod
    def predict(self, queries: pd.DataFrame, context: Tables) -> pd.DataFrame:
        """``pred_norm`` and ``pred_std`` per query (same index).

        ``context`` supplies the features of the queried jobs and devices (job features,
        solo throughputs, device specs): never the labels of the queried pairs.
        """


# ---------------------------------------------------------------------------- queries and labels


def make_queries(devices, workloads, co_runners) -> pd.DataFrame:
    """Queries from three aligned sequences (co_runners: a sequence of job-type sequences)."""
    return pd.DataFrame({
        "device": list(devices), "workload": list(workloads),
        "co_runners": [tuple(c) for c in co_runners],
    })


def pair_queries(pairs: pd.DataFrame) -> pd.DataFrame:
    """Two queries per pair: job a with (b,), then job b with (a,) (rows 0..n-1 and n..2n-1)."""
    a = make_queries(pairs["device"], pairs["workload_a"], [(b,) for b in pairs["workload_b"]])
    b = make_queries(pairs["device"], pairs["workload_b"], [(a,) for a in pairs["workload_a"]])
    return pd.concat([a, b], ignore_index=True)


def pair_labels(pairs: pd.DataFrame) -> pd.DataFrame:
    """Directed training rows from the feasible pairs: queries plus ``norm`` (both jobs of each pair)."""
    feasible = pairs[pairs["feasible"].astype(bool)].reset_index(drop=True)
    queries = pair_queries(feasible)
    queries["norm"] = np.concatenate([feasible["norm_a"].to_numpy(float), feasible["norm_b"].to_numpy(float)])
    bad = ~np.isfinite(queries["norm"])
    if bad.any():
        row = queries[bad].iloc[0]
        raise ValueError(f"pairs: feasible pair on {row.device} with {row.workload} has a NaN normalized throughput")
    return queries


def predict_pairs(predictor: Predictor, pairs: pd.DataFrame, context: Tables) -> pd.DataFrame:
    """``pairs`` with pred_norm_a, pred_norm_b, pred_std_a, pred_std_b added."""
    out = pairs.reset_index(drop=True).copy()
    if out.empty:
        return out.assign(pred_norm_a=[], pred_norm_b=[], pred_std_a=[], pred_std_b=[])
    pred = predictor.predict(pair_queries(out), context)
    n = len(out)
    for col, src in (("pred_norm", "pred_norm"), ("pred_std", "pred_std")):
        values = pred[src].to_numpy(float)
        out[f"{col}_a"], out[f"{col}_b"] = values[:n], values[n:]
    return out


def result(index, pred_norm, pred_std=None) -> pd.DataFrame:
    """The predict() return frame."""
    pred_norm = np.asarray(pred_norm, float)
    std = np.full(len(pred_norm), np.nan) if pred_std is None else np.asarray(pred_std, float)
    return pd.DataFrame({"pred_norm": pred_norm, "pred_std": std}, index=index)


# ---------------------------------------------------------------------------- registry

# name -> (class, default options); variants of one class differ by their options.
REGISTRY: dict[str, tuple[type[Predictor], dict]] = {}


def register(cls: type[Predictor]) -> type[Predictor]:
    """Class decorator: make the predictor available by its ``name`` with default options."""
    return register_variant(cls.name, cls)


def register_variant(name: str, cls: type[Predictor], **defaults) -> type[Predictor]:
    """Make ``cls`` with these default options available as ``name``."""
    if not name or name in REGISTRY:
        raise ValueError(f"predictor {cls.__name__}: name {name!r} is empty or already registered")
    REGISTRY[name] = (cls, defaults)
    return cls


def make_predictor(name: str, seed: int = 0, base: str | None = None, **options) -> Predictor:
    """A fresh predictor by registry name, its defaults updated by ``options``.

    ``base`` (optional) names the registry entry when ``name`` is a new label for a
    configured variant (e.g. name "lgbm-log", base "lgbm", log_target True).
    """
    key = base or name
    if key not in REGISTRY:
        raise KeyError(f"unknown predictor {key!r}; expected one of {sorted(REGISTRY)} (or give base=<one of them>)")
    cls, defaults = REGISTRY[key]
    predictor = cls(seed=seed, **(defaults | options))
    predictor.name = name
    return predictor
