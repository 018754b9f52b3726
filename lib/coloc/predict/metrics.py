"""Error metrics of predicted normalized throughput (and of utilization), overall and by group."""

from __future__ import annotations

import numpy as np
import pandas as pd

from coloc import pairs
from coloc.datasets import family_of

METRICS = ("MAE", "MAPE", "RMSLE", "R2", "max_error", "n")


def rmsle(y_true, y_pred) -> float:
    """Root mean squared log error, sqrt(mean((log(1 + pred) - log(1 + true))^2)), as in Horus.

    Predictions below 0 are clipped to 0 first.
    """
    y_true, y_pred = np.asarray(y_true, float), np.clip(np.asarray(y_pred, float), 0, None)
    return float(np.sqrt(np.mean((np.log1p(y_pred) - np.log1p(y_true)) ** 2)))


def scores(y_true, y_pred) -> dict:
    """MAE, MAPE (%), RMSLE, R-squared, maximum absolute error and count of one set of predictions."""
    y_true, y_pred = np.asarray(y_true, float), np.asarray(y_pred, float)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"scores: {y_true.shape[0]} labels but {y_pred.shape[0]} predictions")
    if len(y_true) == 0:
        return {name: np.nan for name in METRICS[:-1]} | {"n": 0}
    if not np.all(np.isfinite(y_pred)):
        raise ValueError(f"scores: {int((~np.isfinite(y_pred)).sum())} predictions are NaN or infinite")
    error = y_pred - y_true
    ss_tot = float(np.sum((y_true - y_true.mean()) ** 2))
    return {
        "MAE": float(np.mean(np.abs(error))),
        "MAPE": float(100 * np.mean(np.abs(error) / np.abs(y_true))),
        "RMSLE": rmsle(y_true, y_pred),
        "R2": 1 - float(np.sum(error**2)) / ss_tot if ss_tot > 0 else np.nan,
        "max_error": float(np.max(np.abs(error))),
        "n": int(len(y_true)),
    }


def score_table(predictions: pd.DataFrame, group: list[str]) -> pd.DataFrame:
    """Scores per ``group`` (e.g. predictor, protocol, seed), overall, per device and per family.

    Every job of every pair is one sample (a self-pair's two jobs are two). A family's scores cover
    the jobs of that family (whatever their co-runner). Columns: group..., scope, key, metrics.
    """
    columns = [*group, "device", "workload_a", "workload_b", "norm_a", "norm_b", "pred_norm_a", "pred_norm_b"]
    rows = pairs.directed(predictions[columns]).rename(columns={"pred_norm": "pred"})
    rows["family"] = rows["workload"].map(family_of)
    out = []
    for keys, sub in rows.groupby(group, sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        base = dict(zip(group, keys, strict=True))
        out.append(base | {"scope": "overall", "key": "all"} | scores(sub["norm"], sub["pred"]))
        for scope, column in (("device", "device"), ("family", "family")):
            for key, part in sub.groupby(column, sort=True):
                out.append(base | {"scope": scope, "key": key} | scores(part["norm"], part["pred"]))
    return pd.DataFrame(out, columns=[*group, "scope", "key", *METRICS])
