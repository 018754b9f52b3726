"""Baselines: no interference, the training mean, linear regression and LightGBM on pair features;
the training mean utilization of a device.

The pair models see, for each job of a co-located set, the symmetric features of
:func:`coloc.predict.inputs.pair_features`: the job's graph features, solo throughput and
achieved utilization, the same summed over its co-runners, and the device's specs. Each
pair gives two training rows (a with b, b with a).
"""

from __future__ import annotations

import difflib
import functools

import lightgbm as lgb
import numpy as np
import pandas as pd
from sklearn.linear_model import Ridge
from sklearn.preprocessing import StandardScaler

from coloc.predict import encodings
from coloc.predict.base import (
    InsufficientData,
    Predictor,
    Tables,
    UtilizationPredictor,
    check_limit,
    pair_labels,
    result,
)
from coloc.predict.inputs import (
    RATE_COLUMNS,
    SOLO_COLUMNS,
    contrast_features,
    graph_columns,
    job_frame,
    pair_features,
    util_labels,
)
from coloc.predict.registry import register


@register
class NoInterference(Predictor):
    """Every job runs as fast as alone: normalized throughput 1."""

    name = "none"

    def fit(self, train: Tables, groups: str | None = None) -> "NoInterference":
        return self

    def predict(self, queries, context):
        return result(queries.index, np.ones(len(queries)))


@register
class TrainingMean(Predictor):
    """The mean normalized throughput of the training pairs, for every job."""

    name = "mean"

    def fit(self, train: Tables, groups: str | None = None) -> "TrainingMean":
        labels = pair_labels(train.pairs)
        if labels.empty:
            raise InsufficientData("mean: no feasible training pairs")
        self.mean_ = float(labels["norm"].mean())
        return self

    def predict(self, queries, context):
        return result(queries.index, np.full(len(queries), self.mean_))


class PairModel(Predictor):
    """Shared fit/predict of the models on pair features (subclasses build ``self._fit_xy``)."""

    min_rows = 4
    encodings = False  # add the training-pair encodings of coloc.predict.encodings
    contrast = False  # add the per-operator timings and the job / co-runner log ratios

    def _design(self, queries: pd.DataFrame, tables: Tables) -> pd.DataFrame:
        frame = job_frame(tables)
        x = pair_features(queries, frame, self.columns_)
        return x.join(contrast_features(queries, frame)) if self.contrast else x

    def fit(self, train: Tables, groups: str | None = None) -> "PairModel":
        self.check_params()
        labels = pair_labels(train.pairs)
        if len(labels) < self.min_rows:
            raise InsufficientData(f"{self.name}: {len(labels)} training rows, need at least {self.min_rows}")
        self.columns_ = graph_columns(train.workloads) + list(SOLO_COLUMNS) + (list(RATE_COLUMNS) if self.contrast else [])
        x = self._design(labels, train)
        if self.encodings:
            self.known_ = encodings.directed_rows(train.pairs)
            x = x.join(encodings.cross_fitted(labels, train.pairs, self.seed, groups=groups))
        self.features_ = list(x.columns)
        self._fit_xy(x, labels["norm"].to_numpy(float))
        return self

    def predict(self, queries, context):
        x = self._design(queries, context)
        if self.encodings:
            x = x.join(encodings.encode(queries, self.known_))
        return self._predict_x(x[self.features_], queries.index)


@register
class LinearPairs(PairModel):
    """Ridge regression (alpha 1e-3 by default) on standardized pair features; NaN inputs become the training mean."""

    name = "linear"

    def __init__(self, seed: int = 0, alpha: float = 1e-3):
        super().__init__(seed)
        self.alpha = alpha

    def _fit_xy(self, x, y):
        values = x.to_numpy(float)
        seen = np.isfinite(values).any(axis=0)
        self.fill_ = np.where(seen, np.nanmean(np.where(seen, values, 0.0), axis=0), 0.0)
        self.scaler_ = StandardScaler().fit(self._filled(x))
        self.model_ = Ridge(alpha=self.alpha).fit(self._scaled(x), y)

    def _filled(self, x):
        values = x.to_numpy(float)
        return np.where(np.isfinite(values), values, self.fill_)

    def _scaled(self, x):
        return self.scaler_.transform(self._filled(x))

    def _predict_x(self, x, index):
        return result(index, np.clip(self.model_.predict(self._scaled(x)), 0.01, 2.0))


def lgbm_params(seed: int, **overrides) -> dict:
    """LightGBM settings shared by coloc's models: deterministic, one thread, seeded."""
    params = dict(n_estimators=400, learning_rate=0.05, num_leaves=15, min_child_samples=10,
                  subsample=0.8, subsample_freq=1, colsample_bytree=0.8, reg_lambda=1.0,
                  random_state=seed, deterministic=True, force_row_wise=True, n_jobs=1, verbose=-1)
    return params | overrides


@functools.cache
def lightgbm_options() -> frozenset[str]:
    """Every option name LightGBM accepts: lightgbm.LGBMRegressor's parameters, its core parameters and
    their aliases (LightGBM's own list, lightgbm.basic._ConfigAliases; the version is pinned)."""
    from lightgbm.basic import _ConfigAliases

    core = {alias for aliases in _ConfigAliases._get_all_param_aliases().values() for alias in aliases}
    return frozenset(lgb.LGBMRegressor().get_params()) | core


# LightGBM's options that size the model (with their aliases) -> (least, most) accepted: 1e9 trees would train for days
LIGHTGBM_LIMITS = {
    ("n_estimators", "num_iterations", "num_iteration", "n_iter", "num_tree", "num_trees", "num_round", "num_rounds",
     "nrounds", "num_boost_round", "max_iter"): (1, 100_000),
    ("num_leaves", "num_leaf", "max_leaves", "max_leaf", "max_leaf_nodes"): (2, 131_072),
    ("max_bin", "max_bins"): (2, 65_535),
}


def check_lightgbm(options, what: str) -> None:
    """Refuse LightGBM options that LightGBM does not know (it would warn, muted by verbose=-1, and train
    with its defaults): ValueError naming ``what``, the option and a close match."""
    if options is None:
        return
    if not isinstance(options, dict):
        raise ValueError(f"{what}: {options!r}; expected a mapping of LightGBM option: value")
    for key in options:
        if key not in lightgbm_options():
            close = difflib.get_close_matches(key, sorted(lightgbm_options()), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"{what}: unknown LightGBM option {key!r}{hint}; accepted: the parameters of "
                             f"lightgbm.LGBMRegressor ({sorted(lgb.LGBMRegressor().get_params())}) and "
                             f"LightGBM's core parameters and their aliases")
        for names, (least, most) in LIGHTGBM_LIMITS.items():
            if key in names:
                check_limit(f"{what}: LightGBM option {key}", options[key], least, most,
                            "coloc's models train 400 trees of 15 leaves on a few thousand pairs; LightGBM allows at "
                            "most 131072 leaves")


@register
class LightGBMPairs(PairModel):
    """Gradient-boosted trees on pair features; spread from 16% / 84% quantile models.

    Options: ``encodings`` (add the training-pair encodings), ``contrast`` (add the
    job-versus-co-runner ratios of :func:`coloc.predict.inputs.contrast_features`),
    ``log_target`` (fit log normalized throughput: relative errors), ``spread`` (the
    quantile models), ``params`` (LightGBM options over :func:`lgbm_params`).
    """

    name = "lgbm"
    has_spread = True
    options_hint = "LightGBM's own options go in 'params', e.g. params: {n_estimators: 40}"

    def __init__(self, seed: int = 0, spread: bool = True, encodings: bool = False, contrast: bool = False,
                 log_target: bool = False, params: dict | None = None):
        super().__init__(seed)
        self.spread, self.encodings, self.contrast, self.log_target = spread, encodings, contrast, log_target
        self.params = params

    def check_params(self) -> None:
        check_lightgbm(self.params, f"{self.name} params")

    def _fit_xy(self, x, y):
        if self.log_target:  # relative errors: fit log(norm), predict exp
            y = np.log(np.clip(y, 1e-3, None))
        params = lgbm_params(self.seed, **(self.params or {}))
        if len(y) < 50:  # tiny tables (e.g. a few profiled job types): smaller leaves
            params |= dict(min_child_samples=2, num_leaves=4, subsample=1.0)
        self.model_ = lgb.LGBMRegressor(**params).fit(x, y)
        self.quantiles_ = []
        if self.spread:
            for alpha in (0.16, 0.84):
                q = lgb.LGBMRegressor(**(params | dict(objective="quantile", alpha=alpha)))
                self.quantiles_.append(q.fit(x, y))

    def _predict_x(self, x, index):
        back = np.exp if self.log_target else (lambda v: v)
        mean = back(self.model_.predict(x))
        std = None
        if self.quantiles_:
            low, high = (back(q.predict(x)) for q in self.quantiles_)
            std = np.abs(high - low) / 2
        return result(index, mean, std)


@register
class LightGBMEncodings(LightGBMPairs):
    """coloc's own LightGBM: training-pair encodings, contrast features, relative (log) errors."""

    name = "lgbm-enc"
    defaults = {"encodings": True, "contrast": True, "log_target": True}


# ---------------------------------------------------------------------------- utilization


@register
class DeviceMeanUtilization(UtilizationPredictor):
    """The training mean solo utilization of the device (of every training row for a device not seen
    in training): what a utilization model has to beat."""

    name = "mean"

    def fit(self, train: Tables, groups: str | None = None) -> "DeviceMeanUtilization":
        labels = util_labels(train).dropna(subset=["util"])
        if labels.empty:
            raise InsufficientData("mean utilization: no training solo row has a utilization")
        self.device_mean_ = labels.groupby("device")["util"].mean().to_dict()
        self.mean_ = float(labels["util"].mean())
        return self

    def predict(self, devices, workloads, context: Tables) -> np.ndarray:
        return np.array([self.device_mean_.get(d, self.mean_) for d in devices], float)
