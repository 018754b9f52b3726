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

from coloc.predict.base import InsufficientData, Predictor, Tables, make_predictor, pair_labels, register, result
from coloc.predict.protocols import inner_folds

MEMBERS = {"interactions": {}, "lgbm-enc": {"spread": False}}


def weight_grid(n_members: int, steps: int) -> np.ndarray:
    """Every vector of ``n_members`` non-negative multiples of 1/steps summing to 1."""
    grid = [w for w in itertools.product(range(steps + 1), repeat=n_members) if sum(w) == steps]
    return np.array(grid, float) / steps


@register
class Blend(Predictor):
    """Geometric blend of ``members`` ({registry name: options}), weights chosen by inner CV."""

    name = "blend"
    has_spread = True

    def __init__(self, seed: int = 0, members: dict | None = None, inner_k: int = 3, grid: int = 4):
        super().__init__(seed)
        self.members = dict(MEMBERS if members is None else members)
        if not self.members:
            raise ValueError("blend: no members")
        self.inner_k, self.grid = int(inner_k), int(grid)  # inner random folds (K); weight steps of 1/grid

    def _member(self, name: str) -> Predictor:
        options = dict(self.members[name])
        predictor = make_predictor(name, self.seed, **options)
        predictor.validation_groups = self.validation_groups
        return predictor

    def _log_predictions(self, fitted: list[Predictor], queries: pd.DataFrame, context: Tables) -> np.ndarray:
        columns = [np.log(np.maximum(m.predict(queries, context)["pred_norm"].to_numpy(float), 1e-3))
                   for m in fitted]
        return np.column_stack(columns)

    def fit(self, train: Tables) -> "Blend":
        labels = pair_labels(train.pairs)
        if len(labels) < 4:
            raise InsufficientData(f"{self.name}: {len(labels)} training rows, need at least 4")
        feasible = train.pairs[train.pairs["feasible"].astype(bool)].reset_index(drop=True)
        oof = np.full((len(labels), len(self.members)), np.nan)
        for fit_pairs, fill in inner_folds(feasible, self.validation_groups, self.seed, self.inner_k, "blend-folds"):
            inner = train.with_pairs(feasible[fit_pairs])
            fitted = [self._member(name).fit(inner) for name in self.members]
            oof[fill] = self._log_predictions(fitted, labels[fill], train)
        self._choose_weights(oof, labels)
        self.fitted_ = [self._member(name).fit(train) for name in self.members]
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
