"""Horus (Yeung et al., TPDS 2022): utilization predicted from graph features, then interference.

1. A LightGBM model predicts each job's solo GPU utilization from its computation-graph
   features and the device's specs. The label is the measured utilization of the solo
   table where present (``gpu_util``; on a CPU device ``cpu_util``); otherwise (Gavel's
   data) the achieved compute utilization = solo iterations/s x training-step FLOPs / the
   device's peak FP32 FLOP/s, clipped to [0, 1] (see :func:`coloc.predict.inputs.util_labels`).
   Registered as the utilization predictor ``horus`` (kind ``util``).
   A second label, registered as ``horus-implied`` (kind ``util``), follows Horus's premise
   instead: a per-job *implied utilization* fitted on the training pairs
   (:func:`implied_utilization`), learned from the same features by the same LightGBM model.
2. Horus's premise is that interference grows with the co-located jobs' summed
   utilization. The mapping from (the job's predicted utilization, its co-runners' summed
   predicted utilization) to normalized throughput is fitted on the training pairs, as
   small monotone gradient-boosted trees (non-increasing in the co-runners' utilization).
   The training pairs see cross-fitted utilizations (K-fold over the training job types),
   so the mapping is learned on predictions as noisy as those it will get.
"""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from coloc.predict.base import (
    InsufficientData,
    Predictor,
    Tables,
    UtilizationPredictor,
    feasible_rows,
    pair_labels,
    result,
)
from coloc.predict.baselines import check_lightgbm, lgbm_params
from coloc.predict.inputs import DEVICE_COLUMNS, exploded, graph_columns, lookup, util_labels
from coloc.predict.protocols import derived_seed
from coloc.predict.registry import register


@register
class HorusUtilization(UtilizationPredictor):
    """Horus's utilization model: solo utilization in [0, 1] from log graph features and log device specs.

    ``params``: LightGBM options over :func:`coloc.predict.baselines.lgbm_params`.
    """

    name = "horus"
    options_hint = "LightGBM's own options go in 'params', e.g. params: {n_estimators: 40}"

    def __init__(self, seed: int = 0, params: dict | None = None):
        super().__init__(seed)
        self.params = params

    def check_params(self) -> None:
        check_lightgbm(self.params, "horus utilization params")

    def _design(self, devices, workloads, tables: Tables) -> pd.DataFrame:
        wl = tables.workloads.set_index("workload")
        missing = sorted(set(workloads) - set(wl.index))
        if missing:
            raise KeyError(f"utilization model: job types {missing[:5]} have no row in the workloads table")
        dev = tables.devices.set_index("name")
        x = np.log1p(wl.loc[list(workloads), self.columns_].to_numpy(float))
        d = np.log1p(dev.loc[list(devices), self.dev_columns_].to_numpy(float))
        return pd.DataFrame(np.hstack([x, d]), columns=self.columns_ + [f"dev_{c}" for c in self.dev_columns_])

    def labels(self, tables: Tables) -> pd.DataFrame:
        """device, workload, util (in [0, 1]), util_source: the label this model learns, from ``tables``."""
        return util_labels(tables)

    def fit(self, tables: Tables, groups: str | None = None) -> "HorusUtilization":
        self.check_params()
        labels = self.labels(tables).dropna(subset=["util"])
        if len(labels) < 2:
            raise InsufficientData(f"{self.name} utilization: {len(labels)} solo rows with a utilization; need 2")
        self.columns_ = graph_columns(tables.workloads)
        self.dev_columns_ = [c for c in DEVICE_COLUMNS if c in tables.devices.columns]
        x = self._design(labels["device"], labels["workload"], tables)
        params = lgbm_params(self.seed, **(self.params or {}))
        if len(labels) < 50:
            params |= dict(min_child_samples=1, num_leaves=4, subsample=1.0, min_child_weight=0)
        self.model_ = lgb.LGBMRegressor(**params).fit(x, labels["util"].to_numpy(float))
        return self

    def predict(self, devices, workloads, context: Tables) -> np.ndarray:
        x = self._design(devices, workloads, context)
        return np.clip(self.model_.predict(x), 0.0, 1.0)


IMPLIED_RIDGE = 0.01  # weight of the pull of each u towards its start (identifies u where no pair is slowed)


def _implied_residuals(u, own, other, log_s, weight, start):
    """The implied utilizations' residuals: each pair's log slowdown against log(max(1, u_a + u_b)), and the ridge
    pull of each u towards its start."""
    return np.concatenate([np.log(np.maximum(1.0, u[own] + u[other])) - log_s, weight * (u - start)])


def implied_utilization(pairs: pd.DataFrame, ridge: float = IMPLIED_RIDGE) -> pd.DataFrame:
    """device, workload, util, util_source ("implied"): the utilization each job's measured pairs imply.

    The rule (Horus's premise: jobs whose summed utilization stays at or below 100% barely slow
    each other). On each device, one u_j in [0, 1] per job type, chosen so that the slowdown of
    job a next to job b, s_ab = 1 / norm_a (solo / co-located speed), is close to
    max(1, u_a + u_b): least squares on the log slowdown over both directed rows of every
    feasible pair (:func:`coloc.predict.base.feasible_rows`; a self-pair gives max(1, 2 u_a)),
    plus ``ridge`` x (u_j - start_j)^2 per job, where start_j = half the job's median slowdown
    (clipped to [0, 1]); the ridge only decides among values the pairs cannot tell apart (pairs
    that are not slowed say only that u_a + u_b <= 1). A slowdown above 2 cannot be matched
    (u <= 1): such a job gets u near 1. Only the pairs given are read: pass the training fold's.
    A job type with no feasible pair on a device has no row there.
    """
    rows = feasible_rows(pairs)
    frames = []
    for device, part in rows.groupby("device", sort=True):
        jobs = np.array(sorted(set(part["workload"]) | set(part["other"])))
        own = np.searchsorted(jobs, part["workload"].to_numpy())
        other = np.searchsorted(jobs, part["other"].to_numpy())
        log_s = np.log(1.0 / np.clip(part["norm"].to_numpy(float), 1e-6, None))
        median = pd.Series(np.exp(log_s)).groupby(own).median().reindex(range(len(jobs))).fillna(1.0).to_numpy()
        start = np.clip(median / 2, 0.0, 1.0)
        fit = least_squares(_implied_residuals, start, bounds=(0.0, 1.0), method="trf",
                            args=(own, other, log_s, np.sqrt(ridge), start))
        frames.append(pd.DataFrame({"device": device, "workload": jobs, "util": fit.x}))
    if not frames:
        return pd.DataFrame({"device": [], "workload": [], "util": [], "util_source": []})
    return pd.concat(frames, ignore_index=True).assign(util_source="implied")


@register
class HorusImpliedUtilization(HorusUtilization):
    """Horus's utilization model learning the implied utilization of the training pairs
    (:func:`implied_utilization`) instead of the achieved one: the same features, device specs and
    LightGBM model, so job types without training pairs (a held-out fold) get predictions too.

    Which label is closer to nvidia-smi's utilization (what Horus measured): nvidia-smi reports
    the share of time a kernel is running, not the share of peak FLOP/s, so a job that keeps the
    GPU busy with memory-bound kernels reads near 100% while its achieved compute utilization
    is a few percent. The implied label measures the same thing nvidia-smi does, indirectly:
    how much of the device's time the job leaves to others (two jobs at 50% busy time fit
    together without slowing each other). The achieved label is a lower bound of it.
    """

    name = "horus-implied"

    def labels(self, tables: Tables) -> pd.DataFrame:
        """The implied utilization of the training pairs, for the solo rows that have one."""
        implied = implied_utilization(tables.pairs)
        keys = tables.solo[["device", "workload"]].drop_duplicates()
        return keys.merge(implied, on=["device", "workload"], how="inner").reset_index(drop=True)


def cross_fitted_util(tables: Tables, seed: int, params: dict | None = None, k: int = 5) -> pd.DataFrame:
    """Out-of-fold predicted utilization of every solo row, K-fold over the job types."""
    names = sorted(tables.solo["workload"].unique())
    solo = tables.solo[["device", "workload"]].reset_index(drop=True)
    if len(names) < 2:  # nothing to hold out: in-sample predictions
        model = HorusUtilization(seed, params).fit(tables)
        return solo.assign(pred_util=model.predict(solo["device"], solo["workload"], tables))
    order = np.random.default_rng(derived_seed(seed, "horus-crossfit")).permutation(len(names))
    pred = np.full(len(solo), np.nan)
    for part in np.array_split(order, min(k, len(names))):
        held = solo["workload"].isin([names[i] for i in part])
        train = Tables(tables.workloads, tables.solo[~held.to_numpy()], tables.pairs, tables.devices)
        model = HorusUtilization(seed, params).fit(train)
        pred[held.to_numpy()] = model.predict(solo.loc[held, "device"], solo.loc[held, "workload"], tables)
    return solo.assign(pred_util=pred)


@register
class Horus(Predictor):
    """Horus: predicted utilizations of the job and its co-runners -> normalized throughput."""

    name = "horus"
    options_hint = "LightGBM options go in 'util_params' (the utilization model) or 'map_params' (the mapping)"

    def __init__(self, seed: int = 0, util_params: dict | None = None, map_params: dict | None = None):
        super().__init__(seed)
        self.util_params = util_params
        self.map_params = map_params

    def check_params(self) -> None:
        check_lightgbm(self.util_params, "horus util_params")
        check_lightgbm(self.map_params, "horus map_params")

    def fit(self, train: Tables, groups: str | None = None) -> "Horus":
        self.check_params()
        labels = pair_labels(train.pairs)
        if len(labels) < 2:
            raise InsufficientData(f"horus: {len(labels)} training rows; need at least 2")
        self.util_model_ = HorusUtilization(self.seed, self.util_params).fit(train)
        utils = cross_fitted_util(train, self.seed, self.util_params).set_index(["device", "workload"])
        x = self._mapping_inputs(labels, utils["pred_util"])
        params = lgbm_params(self.seed, **(dict(n_estimators=200, num_leaves=7, min_child_samples=20,
                                                monotone_constraints=[0, -1]) | (self.map_params or {})))
        if len(labels) < 50:
            params |= dict(min_child_samples=1, num_leaves=3, subsample=1.0, min_child_weight=0)
        self.mapping_ = lgb.LGBMRegressor(**params).fit(x, labels["norm"].to_numpy(float))
        return self

    @staticmethod
    def _mapping_inputs(queries: pd.DataFrame, util: pd.Series) -> pd.DataFrame:
        frame = util.to_frame("util")
        own = lookup(frame, queries["device"], queries["workload"], "horus query")["util"].to_numpy()
        ex = exploded(queries)
        others = lookup(frame, ex["device"], ex["workload"], "horus co-runner")["util"].to_numpy()
        co = np.zeros(len(queries))
        np.add.at(co, ex["query"].to_numpy(), others)
        return pd.DataFrame({"util_self": own, "util_co": co})

    def predict_util(self, devices, workloads, context: Tables) -> np.ndarray:
        """Predicted solo utilization in [0, 1] of each (device, job type)."""
        return self.util_model_.predict(devices, workloads, context)

    def predict(self, queries, context):
        jobs = pd.concat([queries[["device", "workload"]], exploded(queries)[["device", "workload"]]])
        jobs = jobs.drop_duplicates().reset_index(drop=True)
        util = pd.Series(self.predict_util(jobs["device"], jobs["workload"], context),
                         index=pd.MultiIndex.from_frame(jobs))
        x = self._mapping_inputs(queries.reset_index(drop=True), util)
        return result(queries.index, self.mapping_.predict(x))
