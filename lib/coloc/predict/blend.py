"""Blend: a weighted geometric mean of member predictors, weighted by inner cross-validation.

The weights are chosen inside the training fold only: the members are fitted on inner
folds carved like the protocol's test folds (:func:`coloc.predict.protocols.inner_folds`:
random pairs, or a held-out family / device), their out-of-fold predictions of the
training rows are combined with every weight vector on a grid (steps of 1/``grid``), and
the vector with the lowest mean absolute percentage error wins. A member that cannot be
fitted on an inner fold raises InsufficientData, and the evaluation skips the blend on
that fold, saying why. The spread is the blend's inner out-of-fold error: ``pred_std`` =
prediction x the root mean squared log error on that device (on all devices for a device
not seen in training).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from coloc.predict.base import InsufficientData, Predictor, Tables, pair_labels, result
from coloc.predict.protocols import inner_folds
from coloc.predict.registry import check_params, make_predictor, register, registered

MEMBERS = {"interactions": {}, "lgbm-enc": {"spread": False}}  # the members when none are given


def weight_grid(n_members: int, steps: int) -> np.ndarray:
    """Every vector of ``n_members`` non-negative multiples of 1/steps summing to 1."""
    grid = [w for w in itertools.product(range(steps + 1), repeat=n_members) if sum(w) == steps]
    return np.array(grid, float) / steps


@register
class Blend(Predictor):
    """Geometric blend of ``members`` ({registered pair predictor: options}), weights chosen by inner CV."""

    name = "blend"
    has_spread = True
    limits = {"inner_k": (2, 20), "grid": (1, 100)}
    limits_why = "the weight grid has grid + 1 vectors for two members, 5151 for three at grid 100, each scored per pair"

    def __init__(self, seed: int = 0, members: dict | None = None, inner_k: int = 3, grid: int = 4):
        super().__init__(seed)
        self.members = members  # {registered pair predictor: its options}; None: MEMBERS
        self.inner_k, self.grid = inner_k, grid  # inner random folds (K); weight steps of 1/grid

    def _members(self) -> dict:
        return MEMBERS if self.members is None else self.members

    def check_params(self) -> None:
        members = self._members()
        if not isinstance(members, dict) or not members:
            raise ValueError(f"members {members!r}; expected a non-empty mapping of predictor: options")
        for name, options in members.items():
            try:
                check_params(registered(name), options, f"member {name!r}")
            except KeyError as err:
                raise ValueError(f"member {name!r}: {err.args[0]}") from None
        for key, least in (("inner_k", 2), ("grid", 1)):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"{key} {value!r}; expected an integer of at least {least}")

    def _member(self, name: str) -> Predictor:
        return make_predictor(name, self.seed, **self._members()[name])

    def _log_predictions(self, fitted: list[Predictor], queries: pd.DataFrame, context: Tables) -> np.ndarray:
        columns = [np.log(np.maximum(m.predict(queries, context)["pred_norm"].to_numpy(float), 1e-3))
                   for m in fitted]
        return np.column_stack(columns)

    def fit(self, train: Tables, groups: str | None = None) -> "Blend":
        """Members fitted on inner folds carved by ``groups`` (and given ``groups`` for their own splits)."""
        self.check_params()
        labels = pair_labels(train.pairs)
        if len(labels) < 4:
            raise InsufficientData(f"{self.name}: {len(labels)} training rows, need at least 4")
        feasible = train.pairs[train.pairs["feasible"].astype(bool)].reset_index(drop=True)
        members = self._members()
        oof = np.full((len(labels), len(members)), np.nan)
        for fit_pairs, fill in inner_folds(feasible, groups, self.seed, self.inner_k, "blend-folds"):
            inner = train.with_pairs(feasible[fit_pairs])
            fitted = [self._member(name).fit(inner, groups) for name in members]
            oof[fill] = self._log_predictions(fitted, labels[fill], train)
        self._choose_weights(oof, labels)
        self.fitted_ = [self._member(name).fit(train, groups) for name in members]
        return self

    def _choose_weights(self, oof: np.ndarray, labels: pd.DataFrame) -> None:
        y = labels["norm"].to_numpy(float)
        grid = weight_grid(oof.shape[1], self.grid)
        ape = np.abs(np.exp(oof @ grid.T) - y[:, None]) / y[:, None]
        self.inner_mape_ = 100 * ape.mean(axis=0)
        self.weights_ = grid[int(np.argmin(self.inner_mape_))]
        log_error = pd.Series(oof @ self.weights_ - np.log(np.maximum(y, 1e-3)))
        self.log_rmse_ = float(np.sqrt((log_error ** 2).mean()))
        self.device_log_rmse_ = (log_error ** 2).groupby(labels["device"].to_numpy()).mean().pow(0.5).to_dict()

    def predict(self, queries: pd.DataFrame, context: Tables) -> pd.DataFrame:
        pred = np.exp(self._log_predictions(self.fitted_, queries, context) @ self.weights_)
        spread = queries["device"].map(self.device_log_rmse_).fillna(self.log_rmse_).to_numpy(float)
        return result(queries.index, pred, pred * spread)
