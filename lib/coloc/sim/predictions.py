"""What predictive policies see: out-of-fold predicted co-location and utilization.

Built from the predictors' files (`predictions_<protocol>.parquet`,
`utilization_<protocol>.parquet`) for one chosen predictor each, or from the
ground truth for the oracle (labelled so). Lookups are symmetric: the row of
the unordered pair (a, b) answers both `norm(d, a, b)` and `norm(d, b, a)`.
Predicted normalized throughputs are clipped to [0.001, 1]: sharing a GPU
never speeds a job up (the measured maximum is 1.0).
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from coloc.sim.interference import GroundTruth, require_columns

PRED_COLUMNS = ("device", "workload_a", "workload_b", "predictor", "pred_norm_a", "pred_norm_b")
UTIL_COLUMNS = ("device", "workload", "predictor", "pred_util")


class Predictions:
    """Predicted normalized throughput (with optional spread) and solo utilization."""

    def __init__(self, norms: dict, stds: dict | None = None, utils: dict | None = None,
                 source: str = "", oracle: bool = False):
        self._norm = norms
        self._std = stds or {}
        self._util = utils or {}
        self.source = source
        self.oracle = oracle

    def norm(self, device: str, workload: str, other: str) -> float:
        """Predicted normalized throughput of `workload` co-located with `other`."""
        try:
            return self._norm[(device, workload, other)]
        except KeyError:
            raise KeyError(f"predictions ({self.source}): no prediction for device={device!r} "
                           f"pair=({workload!r}, {other!r})") from None

    def std(self, device: str, workload: str, other: str) -> float:
        """Predicted spread of `norm`; 0.0 where the predictor gives none."""
        return self._std.get((device, workload, other), 0.0)

    def has_norm(self) -> bool:
        return bool(self._norm)

    def missing_pairs(self, truth: GroundTruth, device: str, workloads) -> list[tuple[str, str]]:
        """Feasible measured pairs among `workloads` on `device` that have no prediction."""
        names = sorted(set(workloads))
        return [(a, b) for i, a in enumerate(names) for b in names[i:]
                if truth.pair_feasible(device, a, b) and (device, a, b) not in self._norm]

    def has_util(self) -> bool:
        return bool(self._util)

    def util(self, device: str, workload: str) -> float:
        """Predicted solo GPU utilization in [0, 1]."""
        try:
            return self._util[(device, workload)]
        except KeyError:
            raise KeyError(f"utilization predictions ({self.source}): none for device={device!r} "
                           f"workload={workload!r}") from None

    @classmethod
    def from_frames(cls, pairs_pred: pd.DataFrame | None, util_pred: pd.DataFrame | None,
                    predictor_norm: str | None, predictor_util: str | None,
                    source: str = "", seed: int | None = None) -> "Predictions":
        """Select one predictor from each table (either may be None) and one prediction seed.

        Files with a `seed` column hold one out-of-fold run per seed: `seed` picks
        one (the smallest if absent). Rows repeated within a seed (a pair in two
        held-out folds under leave-one-family-out) are averaged.
        """
        norms, stds, utils = {}, {}, {}
        if pairs_pred is not None:
            norms, stds = _norm_dicts(pairs_pred, predictor_norm, source, seed)
        if util_pred is not None:
            utils = _util_dict(util_pred, predictor_util, source, seed)
        return cls(norms, stds, utils, source=source)

    @classmethod
    def from_files(cls, pairs_path: str | Path | None, util_path: str | Path | None,
                   predictor_norm: str | None, predictor_util: str | None,
                   seed: int | None = None) -> "Predictions":
        """Read the predictors' Parquet files; a path of None or '' is skipped."""
        pairs = pd.read_parquet(pairs_path) if pairs_path else None
        util = pd.read_parquet(util_path) if util_path else None
        parts = [f"{name} from {path}" for name, path in ((predictor_norm, pairs_path), (predictor_util, util_path))
                 if path]
        source = "; ".join(parts)
        return cls.from_frames(pairs, util, predictor_norm, predictor_util, source=source, seed=seed)

    @classmethod
    def from_truth(cls, truth: GroundTruth, utils: "Predictions | None" = None) -> "Predictions":
        """The measured pairs as 'predictions' (ORACLE: an upper bound, not a predictor)."""
        norms = truth.pair_norms()
        util = dict(utils._util) if utils is not None else {}
        return cls(norms, {}, util, source=f"ORACLE: {truth.name}", oracle=True)


def pick_seed(frame: pd.DataFrame, seed: int | None, what: str) -> pd.DataFrame:
    """Rows of one prediction seed: `seed` if the file has it, else its smallest seed."""
    if "seed" not in frame.columns or frame.empty:
        return frame
    seeds = sorted(frame["seed"].unique())
    chosen = seed if seed in seeds else seeds[0]
    return frame[frame["seed"] == chosen]


def _canonical(rows: pd.DataFrame) -> pd.DataFrame:
    """Swap columns so that workload_a <= workload_b; average repeated out-of-fold rows."""
    rows = rows.copy()
    swap = rows["workload_a"] > rows["workload_b"]
    for left, right in (("workload_a", "workload_b"), ("pred_norm_a", "pred_norm_b"), ("pred_std_a", "pred_std_b")):
        if left in rows.columns:
            rows.loc[swap, [left, right]] = rows.loc[swap, [right, left]].to_numpy(copy=True)
    values = [c for c in ("pred_norm_a", "pred_norm_b", "pred_std_a", "pred_std_b") if c in rows.columns]
    return rows.groupby(["device", "workload_a", "workload_b"], as_index=False)[values].mean()


def _predictor_rows(frame: pd.DataFrame, columns, predictor: str | None, what: str) -> pd.DataFrame:
    """The rows of one predictor, after checking the columns; an error naming the predictors there are."""
    require_columns(frame, columns, what)
    rows = frame[frame["predictor"] == predictor]
    if rows.empty:
        raise ValueError(f"{what}: no rows for predictor {predictor!r}; have {sorted(frame['predictor'].unique())}")
    return rows


def _norm_dicts(frame: pd.DataFrame, predictor: str | None, source: str, seed: int | None = None):
    rows = _predictor_rows(frame, PRED_COLUMNS, predictor, f"predictions {source}")
    rows = _canonical(pick_seed(rows, seed, source))
    has_std = {"pred_std_a", "pred_std_b"} <= set(rows.columns)
    norms, stds = {}, {}
    for row in rows.itertuples(index=False):
        na, nb = float(row.pred_norm_a), float(row.pred_norm_b)
        if not (math.isfinite(na) and math.isfinite(nb)):
            continue  # no prediction for an infeasible pair
        keys = ((row.device, row.workload_a, row.workload_b), (row.device, row.workload_b, row.workload_a))
        if row.workload_a == row.workload_b:
            na = nb = (na + nb) / 2
        for key, value in zip(keys, (na, nb)):
            norms[key] = min(max(value, 1e-3), 1.0)  # sharing never speeds a job up
        if has_std:
            for key, value in zip(keys, (float(row.pred_std_a), float(row.pred_std_b))):
                if math.isfinite(value):
                    stds[key] = max(value, 0.0)
    return norms, stds


def _util_dict(frame: pd.DataFrame, predictor: str | None, source: str, seed: int | None = None):
    rows = _predictor_rows(frame, UTIL_COLUMNS, predictor, f"utilization predictions {source}")
    rows = pick_seed(rows, seed, source).groupby(["device", "workload"], as_index=False)["pred_util"].mean()
    out = {}
    for row in rows.itertuples(index=False):
        value = float(row.pred_util)
        if not math.isfinite(value):
            raise ValueError(f"utilization predictions {source}: pred_util of "
                             f"({row.device!r}, {row.workload!r}) is {value}; expected a number")
        out[(row.device, row.workload)] = min(max(value, 0.0), 1.0)
    return out
