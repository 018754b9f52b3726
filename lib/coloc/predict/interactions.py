"""Interaction model: log normalized throughput as a sum of job, co-runner and family effects.

For a job ``j`` next to one co-runner ``c`` on device ``d``, ridge regression fits

    log norm = b + e[d] + e[j] + e[c] + e[j, d] + e[c, d]
               + e[fam(j), fam(c), d] + e[j, fam(c), d] + e[c, fam(j), d]

on the training pairs' directed rows, one indicator column per effect seen in training;
an effect never seen (a new job type, family or device) contributes 0, so the prediction
falls back on what is known (e.g. the co-runner's effect for a job of a new family). The
ridge penalty (the intercept unpenalized) is chosen among a few values by exact leave-one-out
on the training rows (:func:`ridge_loo`: one eigendecomposition of the centered X'X (or XX')
serves every penalty; the same fit and choice as scikit-learn's ``RidgeCV``, at about a third of the time
of its SVD of X on Lucid's 2,776 x 1,374 design).

With several co-runners the job's predicted pairwise log slowdowns add up: the product of
pairwise normalized throughputs, the simulator's extrapolation beyond pairs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from coloc.datasets import family_of
from coloc.predict.base import InsufficientData, Predictor, Tables, pair_labels, result
from coloc.predict.inputs import exploded
from coloc.predict.registry import register

ALPHAS = (0.1, 0.3, 1.0, 3.0, 10.0)
FLOOR = 1e-3  # normalized throughputs below this are taken as this before the log


def effect_keys(device: str, job: str, co_runner: str) -> list[str]:
    """The names of the effects one (device, job, co-runner) row switches on."""
    fj, fc = family_of(job), family_of(co_runner)
    return [f"dev={device}", f"job={job}", f"co={co_runner}", f"job={job}@{device}", f"co={co_runner}@{device}",
            f"fam={fj}|{fc}@{device}", f"job={job}|{fc}@{device}", f"co={co_runner}|{fj}@{device}"]


@register
class InteractionModel(Predictor):
    """Ridge regression of log normalized throughput on job, co-runner and family effects."""

    name = "interactions"

    def __init__(self, seed: int = 0, alphas=ALPHAS):
        super().__init__(seed)
        self.alphas = alphas  # ridge penalties to choose from

    def _design(self, row_keys) -> np.ndarray:
        """One row per list of effect names: 1 in the column of each effect seen in training."""
        x = np.zeros((len(row_keys), len(self.vocab_)))
        for row, keys in enumerate(row_keys):
            x[row, [self.vocab_[k] for k in keys if k in self.vocab_]] = 1.0
        return x

    def fit(self, train: Tables, groups: str | None = None) -> "InteractionModel":
        labels = pair_labels(train.pairs)
        if len(labels) < 4:
            raise InsufficientData(f"{self.name}: {len(labels)} training rows, need at least 4")
        row_keys = list(map(effect_keys, labels["device"], labels["workload"], labels["co_runners"].str[0]))
        self.vocab_ = {}
        for keys in row_keys:
            for key in keys:
                self.vocab_.setdefault(key, len(self.vocab_))
        y = np.log(np.maximum(labels["norm"].to_numpy(float), FLOOR))
        self.coef_, self.intercept_, self.alpha_ = ridge_loo(self._design(row_keys), y, self.alphas)
        return self

    def predict(self, queries: pd.DataFrame, context: Tables) -> pd.DataFrame:
        ex = exploded(queries)  # one row per (query, co-runner)
        jobs = queries["workload"].to_numpy()[ex["query"].to_numpy()]
        row_keys = list(map(effect_keys, ex["device"], jobs, ex["workload"]))
        log_pair = self._design(row_keys) @ self.coef_ + self.intercept_ if row_keys else np.zeros(0)
        log_norm = np.zeros(len(queries))
        np.add.at(log_norm, ex["query"].to_numpy(), log_pair)
        return result(queries.index, np.exp(log_norm))


def ridge_loo(x: np.ndarray, y: np.ndarray, alphas) -> tuple[np.ndarray, float, float]:
    """Ridge regression of ``y`` on ``x`` with an unpenalized intercept, its penalty the one of ``alphas`` with the
    least mean squared leave-one-out error (the first on a tie). Returns (coefficients, intercept, penalty).

    With x centered and z (n x r) such that z z' = x x' and z'z = diag(lam) (z = x V from x'x = V diag(lam) V' when
    x has at least as many rows as columns, else z = U diag(sqrt(lam)) from x x' = U diag(lam) U'), the fitted
    values at penalty a are z (z'y_c / (lam + a)), row i's leverage h_i = 1/n + sum_k z_ik^2 / (lam_k + a) (1/n: the
    intercept), and its leave-one-out residual (y_i - fitted_i) / (1 - h_i), exactly.
    """
    mean_x, mean_y = x.mean(axis=0), y.mean()
    xc, yc = x - mean_x, y - mean_y
    primal = xc.shape[0] >= xc.shape[1]
    lam, vectors = np.linalg.eigh(xc.T @ xc if primal else xc @ xc.T)
    lam = np.maximum(lam, 0.0)  # positive semi-definite: rounding only below 0
    z = xc @ vectors if primal else vectors * np.sqrt(lam)
    zy, z2 = z.T @ yc, z * z
    best = None
    for alpha in (float(a) for a in alphas):
        shrink = 1.0 / (lam + alpha)
        residual = yc - z @ (shrink * zy)
        leverage = 1.0 / len(y) + z2 @ shrink
        error = np.mean((residual / (1.0 - leverage)) ** 2)
        if best is None or error < best[0]:
            best = (error, alpha, shrink)
    _, alpha, shrink = best
    coef = vectors @ (shrink * zy) if primal else xc.T @ (vectors @ (shrink * (vectors.T @ yc)))
    return coef, float(mean_y - mean_x @ coef), alpha
