"""The models' interface (scikit-learn's estimator conventions), the tables they see, queries and labels.

Two kinds of model, each registered by name (:mod:`coloc.predict.registry`):

* ``pair`` (:class:`Predictor`): fitted on :class:`Tables` (``workloads``, ``solo``, training
  ``pairs``, ``devices``), predicts for queries (device, job type, co-runners) each job's
  co-located normalized throughput (co-located / solo iterations per second), with a spread
  (``pred_std``) where it has one and NaN otherwise;
* ``util`` (:class:`UtilizationPredictor`): fitted on the same tables, predicts each (device,
  job type)'s solo utilization in [0, 1] (the label: :func:`coloc.predict.inputs.util_labels`).

Every model follows scikit-learn's estimator conventions: its constructor only stores its
parameters (validated by :meth:`Model.check_params`, called by ``fit`` and by
:func:`coloc.predict.registry.check_options`), ``get_params`` / ``set_params`` and
``sklearn.base.clone`` work, and what a fit learns ends with ``_``. ``fit(train, groups)``
takes the validation groups: how a model that early-stops or tunes carves its validation
split from the training fold (None: at random; "family", "workload" or "device": one held-out
group, as the protocol's test fold is carved).

Queries are a DataFrame with columns ``device``, ``workload`` and ``co_runners`` (a tuple
of job types sharing the device with ``workload``). Infeasible pairs (``feasible``
False: they did not fit on the device) are never regression targets.
"""

from __future__ import annotations

import inspect
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from coloc.pairs import directed


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


# ---------------------------------------------------------------------------- models


def check_limit(what: str, value, least, most, why: str = "") -> None:
    """Refuse ``value`` outside [least, most], or not an integer where both bounds are: ValueError naming ``what``."""
    integer = isinstance(least, int) and isinstance(most, int)
    kind = (int,) if integer else (int, float)
    if not isinstance(value, kind) or isinstance(value, bool) or not least <= value <= most:
        raise ValueError(f"{what} {value!r}; expected {'an integer' if integer else 'a number'} from {least} to "
                         f"{most}" + (f" ({why})" if why else ""))


class Model(BaseEstimator, ABC):
    """What every registered model shares: a registry ``name`` and ``kind``, scikit-learn's conventions.

    A variant of a model is a subclass that sets its own ``name`` and ``defaults`` (constructor
    defaults that differ from its parent's, e.g. E-GGAT with constant edges): it keeps its name
    through ``clone`` and lists every parameter in ``get_params``.
    """

    name: str = ""
    kind: str = ""
    defaults: dict = {}
    options_hint: str = ""  # said with an unknown option (e.g. where nested options go)
    # option -> (least, most) accepted, checked before anything runs (an integer option where both are integers);
    # sizes and counts beyond them ran out of memory or would run for days on a 24 GB machine (limits_why says how)
    limits: dict = {}
    limits_why: str = ""

    def __init__(self, seed: int = 0):
        self.seed = seed  # every source of randomness derives its own generator from it

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "defaults" in cls.__dict__:
            cls.__init__ = _with_defaults(super(cls, cls).__init__, cls.defaults, cls.__name__)

    def check_params(self) -> None:
        """Raise ValueError naming the model and the parameter whose value it cannot use (no work is done)."""

    @abstractmethod
    def fit(self, train: Tables, groups: str | None = None) -> "Model":
        """Fit on the training tables only; ``groups``: how to carve a validation split (module docstring)."""


def _with_defaults(init, defaults: dict, owner: str):
    """``init`` with other default values: the constructor of a variant (its signature says them)."""
    signature = inspect.signature(init)
    unknown = sorted(set(defaults) - set(signature.parameters))
    if unknown:
        raise TypeError(f"{owner}.defaults: {unknown} are not parameters of {init.__qualname__}")
    parameters = [p.replace(default=defaults.get(p.name, p.default)) for p in signature.parameters.values()]
    variant_signature = signature.replace(parameters=parameters)

    def __init__(self, *args, **kwargs):
        bound = variant_signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        init(*bound.args, **bound.kwargs)

    __init__.__signature__ = variant_signature
    __init__.__qualname__ = f"{owner}.__init__"
    return __init__


def params_of(model: Model) -> str:
    """The model's constructor parameters but ``seed`` (a column of its own) as JSON, keys sorted."""
    params = {k: v for k, v in model.get_params(deep=False).items() if k != "seed"}
    return json.dumps(params, sort_keys=True)


class Predictor(Model):
    """Predicts co-located normalized throughput (kind ``pair``). Subclasses set ``name`` and ``has_spread``."""

    kind = "pair"
    has_spread: bool = False

    @abstractmethod
    def predict(self, queries: pd.DataFrame, context: Tables) -> pd.DataFrame:
        """``pred_norm`` and ``pred_std`` per query (same index).

        ``context`` supplies the features of the queried jobs and devices (job features,
        solo throughputs, device specs): never the labels of the queried pairs.
        """


class UtilizationPredictor(Model):
    """Predicts a job's solo utilization in [0, 1] on a device (kind ``util``)."""

    kind = "util"

    @abstractmethod
    def predict(self, devices, workloads, context: Tables) -> np.ndarray:
        """Predicted solo utilization of each aligned (device, job type); ``context`` as for :class:`Predictor`."""


# ---------------------------------------------------------------------------- queries and labels


def make_queries(devices, workloads, co_runners) -> pd.DataFrame:
    """Queries from three aligned sequences (co_runners: a sequence of job-type sequences)."""
    return pd.DataFrame({
        "device": list(devices), "workload": list(workloads),
        "co_runners": [tuple(c) for c in co_runners],
    })


def pair_queries(pairs: pd.DataFrame) -> pd.DataFrame:
    """Two queries per pair (:func:`coloc.pairs.directed`): job a with (b,), then job b with (a,)
    (rows 0..n-1 and n..2n-1)."""
    rows = directed(pairs[["device", "workload_a", "workload_b"]])
    return make_queries(rows["device"], rows["workload"], [(other,) for other in rows["other"]])


def feasible_rows(pairs: pd.DataFrame) -> pd.DataFrame:
    """device, workload, other, norm: the directed rows (:func:`coloc.pairs.directed`) of the feasible pairs.

    Raises ValueError naming the pair when a feasible pair has no finite normalized throughput.
    """
    feasible = pairs[pairs["feasible"].astype(bool)]
    rows = directed(feasible[["device", "workload_a", "workload_b", "norm_a", "norm_b"]])
    bad = ~np.isfinite(rows["norm"].to_numpy(float))
    if bad.any():
        row = rows[bad].iloc[0]
        raise ValueError(f"pairs: feasible pair on {row.device} with {row.workload} has a NaN normalized throughput")
    return rows


def pair_labels(pairs: pd.DataFrame) -> pd.DataFrame:
    """Directed training rows from the feasible pairs: queries plus ``norm`` (both jobs of each pair)."""
    rows = feasible_rows(pairs)
    queries = make_queries(rows["device"], rows["workload"], [(other,) for other in rows["other"]])
    queries["norm"] = rows["norm"].to_numpy(float)
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
