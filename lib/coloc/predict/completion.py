"""Low-rank matrix completion of the job x co-runner matrix per device (Gavel's approach).

Per device, the log normalized throughput of job j next to co-runner c is modelled as

    L[j, c] = mu + a[j] + b[c] + U[j] . V[c]

(a job's sensitivity a, a co-runner's aggressiveness b, and a rank-``rank`` interaction),
fitted by regularized alternating least squares on the training pairs' directed rows only
(both jobs of each feasible pair). The factors start from the truncated SVD of the
bias-removed matrix (missing entries 0), so the fit is deterministic. A job type with
measured pairs (e.g. a new job's probes next to a few reference co-runners) gets its own
row and column fitted from those entries alone, shrunk by the penalty towards the
device's average; a job type with none falls back on mu + the known side's bias (and 0 for
the unknown). ``pred_std`` is the fit's residual log RMSE on the device times the prediction.
With several co-runners the pairwise log slowdowns add up, as in
:class:`coloc.predict.interactions.InteractionModel`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from coloc.predict.base import InsufficientData, Predictor, Tables, pair_labels, result
from coloc.predict.inputs import exploded
from coloc.predict.registry import register

FLOOR = 1e-3  # normalized throughputs below this are taken as this before the log


def _ridge_rows(targets: np.ndarray, mask: np.ndarray, factors: np.ndarray, penalty: np.ndarray) -> np.ndarray:
    """Per row i, the ridge solution of targets[i, mask[i]] ~ factors[mask[i]] @ w (penalty: a diagonal)."""
    out = np.zeros((len(targets), factors.shape[1]))
    for i in range(len(targets)):
        x, y = factors[mask[i]], targets[i, mask[i]]
        out[i] = np.linalg.solve(x.T @ x + np.diag(penalty), x.T @ y)
    return out


def als(values: np.ndarray, rank: int, penalty: float, bias_penalty: float, iterations: int):
    """(mu, a, b, U, V) of values ~ mu + a[j] + b[c] + U[j] . V[c] on its finite entries."""
    mask = np.isfinite(values)
    mu = float(values[mask].mean())
    centred = np.where(mask, values - mu, 0.0)
    a = centred.sum(1) / (mask.sum(1) + bias_penalty)
    b = np.where(mask, centred - a[:, None], 0.0).sum(0) / (mask.sum(0) + bias_penalty)
    residual = np.where(mask, centred - a[:, None] - b[None, :], 0.0)
    u, s, vt = np.linalg.svd(residual, full_matrices=False)
    root = np.sqrt(s[:rank])
    U, V = u[:, :rank] * root, vt[:rank].T * root
    pen = np.array([bias_penalty] + [penalty] * rank)
    for _ in range(iterations):
        rows = _ridge_rows(np.where(mask, values - mu - b[None, :], 0.0), mask, np.column_stack([np.ones(len(V)), V]), pen)
        a, U = rows[:, 0], rows[:, 1:]
        cols = _ridge_rows(np.where(mask, values - mu - a[:, None], 0.0).T, mask.T,
                           np.column_stack([np.ones(len(U)), U]), pen)
        b, V = cols[:, 0], cols[:, 1:]
    return mu, a, b, U, V


@register
class MatrixCompletion(Predictor):
    """Regularized low-rank completion (ALS) of each device's job x co-runner log slowdown matrix."""

    name = "completion"
    has_spread = True
    limits = {"rank": (0, 1_000), "iterations": (1, 10_000)}
    limits_why = "the default fits rank 2 in 30 iterations; a rank above the job types' count changes nothing"

    def __init__(self, seed: int = 0, rank: int = 2, penalty: float = 1.0, bias_penalty: float = 0.3,
                 iterations: int = 30, across_devices: bool = True):
        super().__init__(seed)
        self.across_devices = across_devices  # complete one table over every device (module docstring)
        self.rank, self.penalty, self.bias_penalty, self.iterations = rank, penalty, bias_penalty, iterations

    def check_params(self) -> None:
        for key, least in (("rank", 0), ("iterations", 1)):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"{key} {value!r}; expected an integer of at least {least}")
        for key in ("penalty", "bias_penalty"):
            value = getattr(self, key)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
                raise ValueError(f"{key} {value!r}; expected a number above 0")

    def fit(self, train: Tables, groups: str | None = None) -> "MatrixCompletion":
        self.check_params()
        labels = pair_labels(train.pairs)
        if len(labels) < 4:
            raise InsufficientData(f"{self.name}: {len(labels)} training rows, need at least 4")
        rows = pd.DataFrame({"device": labels["device"], "workload": labels["workload"],
                             "other": labels["co_runners"].str[0],
                             "log": np.log(np.maximum(labels["norm"].to_numpy(float), FLOOR))})
        rows = rows.groupby(["device", "workload", "other"], as_index=False)["log"].mean()
        if self.across_devices:
            # two views of one table: a job's row over (device, co-runner), a co-runner's over (device, job)
            views = [self._complete(rows, "workload", ["device", "other"]),
                     self._complete(rows, "other", ["device", "workload"])]
            fitted = pd.concat(views).groupby(["device", "workload", "other"])["fit"].mean()
        else:
            fitted = pd.concat([self._complete(part, "workload", ["other"]).assign(device=d)
                                for d, part in rows.groupby("device")]).set_index(["device", "workload", "other"])["fit"]
        self.fitted_ = fitted.to_dict()
        known = rows.set_index(["device", "workload", "other"])["log"]
        error = (fitted.reindex(known.index) - known).groupby(level="device")
        self.device_rmse_ = error.apply(lambda e: float(np.sqrt(np.mean(e ** 2)))).to_dict()
        self.device_mean_ = rows.groupby("device")["log"].mean().to_dict()
        self.job_bias_ = (rows.groupby(["device", "workload"])["log"].mean() - rows["device"].map(self.device_mean_).groupby(
            [rows["device"], rows["workload"]]).mean()).to_dict()
        self.co_bias_ = (rows.groupby(["device", "other"])["log"].mean() - rows["device"].map(self.device_mean_).groupby(
            [rows["device"], rows["other"]]).mean()).to_dict()
        return self

    def _complete(self, rows: pd.DataFrame, index: str, columns: list[str]) -> pd.DataFrame:
        """The completed matrix of ``rows`` (index x columns) as long rows with column ``fit``."""
        matrix = rows.pivot_table(index=index, columns=columns, values="log", aggfunc="mean")
        mu, a, b, U, V = als(matrix.to_numpy(float), self.rank, self.penalty, self.bias_penalty, self.iterations)
        full = pd.DataFrame(mu + a[:, None] + b[None, :] + U @ V.T, index=matrix.index, columns=matrix.columns)
        return full.stack(list(range(len(columns))), future_stack=True).rename("fit").reset_index()

    def _log_pair(self, device: str, job: str, co_runner: str) -> float:
        key = (device, job, co_runner)
        if key in self.fitted_:
            return self.fitted_[key]
        mean = self.device_mean_.get(device, float(np.mean(list(self.device_mean_.values()))))
        return mean + self.job_bias_.get((device, job), 0.0) + self.co_bias_.get((device, co_runner), 0.0)

    def predict(self, queries: pd.DataFrame, context: Tables) -> pd.DataFrame:
        ex = exploded(queries)
        jobs = queries["workload"].to_numpy()[ex["query"].to_numpy()]
        log_pair = np.array([self._log_pair(d, j, c) for d, j, c in zip(ex["device"], jobs, ex["workload"], strict=True)])
        log_norm = np.zeros(len(queries))
        np.add.at(log_norm, ex["query"].to_numpy(), log_pair)
        pred = np.exp(log_norm)
        rmse = queries["device"].map(self.device_rmse_).fillna(0.0).to_numpy(float)
        return result(queries.index, pred, pred * rmse)
