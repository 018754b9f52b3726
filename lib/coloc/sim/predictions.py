"""What predictive policies see: out-of-fold predicted co-location and utilization.

Built from the predictors stage's files (`predictions/<dataset>/<protocol>.parquet`,
`utilization/<dataset>/<protocol>.parquet`, the kinds in FILES) for one chosen predictor
each, or from the ground truth for the oracle (labelled so). Pairs become
lookups by coloc.pairs' rule: the row of the unordered pair (a, b) answers both
`norm(d, a, b)` and `norm(d, b, a)`; a self-pair's value is the mean of its two
jobs; rows repeated within a seed (a pair in two held-out folds) are averaged.

Refused, with the file, predictor, pair and value: a predicted normalized
throughput <= 0 (no progress) or above 1 + TOLERANCE = 2 (twice the solo
speed), a negative or infinite spread, a utilization that is NaN or outside
[0, 1 + TOLERANCE]. Kept, and stated: a normalized throughput in (1, 2] is
clipped to 1 (sharing a GPU never speeds a job up, the measured maximum is
1.0; honest regressors overshoot: the lofo linear model predicts up to 1.48,
random5 interactions up to 1.19), one in (0, 0.001) is raised to 0.001, and a
utilization above 1 is clipped to 1. A NaN normalized throughput is no
prediction: `require_pairs` refuses it for a feasible pair a run uses.
An optional `params` column (JSON text of the predictor's parameters) is kept
as `norm_params` / `util_params`.
"""
from __future__ import annotations

import math
import numbers
from pathlib import Path

import numpy as np
import pandas as pd

from coloc.pairs import directed, keyed_mean
from coloc.sim.interference import GroundTruth, require_columns

PRED_COLUMNS = ("device", "workload_a", "workload_b", "predictor", "pred_norm_a", "pred_norm_b")
UTIL_COLUMNS = ("device", "workload", "predictor", "pred_util")
FILES = {"norm": "predictions", "util": "utilization"}  # a policy's need -> the predictors stage's file kind
TOLERANCE = 1.0   # a predicted normalized throughput in (1, 1 + TOLERANCE] is clipped to 1; above, refused
PROFILED_SOURCE = "measured pairs (the paper's assumption: every pair profiled)"  # the source of from_profiled_pairs
FLOOR = 1e-3       # predicted normalized throughputs below this (and > 0) are raised to it


class Predictions:
    """Predicted normalized throughput (with optional spread) and solo utilization."""

    def __init__(self, norms: dict, stds: dict | None = None, utils: dict | None = None,
                 source: str = "", oracle: bool = False, unpredicted: set | None = None,
                 norm_params: str = "", util_params: str = "", resources: dict | None = None,
                 resource_names: tuple[str, ...] = ()):
        self.source = source
        _require_range(norms, "normalized throughput", 0.0, 1.0 + TOLERANCE, source, low_open=True)
        _require_range(stds or {}, "spread", 0.0, math.inf, source)
        _require_range(utils or {}, "utilization", 0.0, 1.0 + TOLERANCE, source)
        self._norm = norms
        # (device, job, co-runner) -> the job's predicted co-located over solo use of each resource in
        # resource_names (ISACPP's resource network); empty where no resource was predicted (Gavel's data)
        self._resources = resources or {}
        self.resource_names = tuple(resource_names)
        self._std = stds or {}
        self._util = utils or {}
        self._unpredicted = unpredicted or set()  # keys whose prediction is NaN
        self.oracle = oracle
        self.norm_params = norm_params
        self.util_params = util_params

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
        """Feasible measured pairs among `workloads` on `device` lacking a prediction in either order."""
        names = sorted(set(workloads))
        return [(a, b) for i, a in enumerate(names) for b in names[i:]
                if truth.pair_feasible(device, a, b)
                and ((device, a, b) not in self._norm or (device, b, a) not in self._norm)]

    def require_pairs(self, truth: GroundTruth, device: str, workloads) -> None:
        """Raise ValueError naming the pairs if a feasible pair among `workloads` has no prediction (or NaN)."""
        missing = self.missing_pairs(truth, device, workloads)
        if missing:
            shown = [f"({a!r}, {b!r}): " + ("NaN" if {(device, a, b), (device, b, a)} & self._unpredicted
                                           else "no row") for a, b in missing[:5]]
            raise ValueError(f"predictions ({self.source}) lack {len(missing)} feasible pairs on {device} "
                             f"used by the trace, e.g. {'; '.join(shown)}; expected a normalized throughput "
                             f"for every pair that fits in memory")

    def has_resources(self) -> bool:
        return bool(self._resources)

    def resource_ratios(self, device: str, workload: str, other: str) -> tuple[float, ...]:
        """`workload`'s predicted co-located over solo use of each of `resource_names` next to `other`."""
        try:
            return self._resources[(device, workload, other)]
        except KeyError:
            raise KeyError(f"resource predictions ({self.source}): none for device={device!r} "
                           f"workload={workload!r} next to {other!r}") from None

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
        norms, stds, unpredicted, utils, norm_params, util_params = {}, {}, set(), {}, "", ""
        if pairs_pred is not None:
            rows = pick_seed(_predictor_rows(pairs_pred, PRED_COLUMNS, predictor_norm, f"predictions {source}"),
                             seed, source)
            norms, stds, unpredicted = _norm_dicts(rows, f"predictions {source}, predictor {predictor_norm!r}")
            norm_params = _params(rows, f"predictions {source}, predictor {predictor_norm!r}")
        if util_pred is not None:
            rows = pick_seed(_predictor_rows(util_pred, UTIL_COLUMNS, predictor_util,
                                             f"utilization predictions {source}"), seed, source)
            utils = _util_dict(rows, f"utilization predictions {source}, predictor {predictor_util!r}")
            util_params = _params(rows, f"utilization predictions {source}, predictor {predictor_util!r}")
        return cls(norms, stds, utils, source=source, unpredicted=unpredicted, norm_params=norm_params,
                   util_params=util_params)

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
    def from_profiled_pairs(cls, truth: GroundTruth, utils: "Predictions | None" = None) -> "Predictions":
        """The truth's pairs as a policy's pair predictions under a paper's assumption that every pair was profiled
        beforehand (ISACPP's), labelled so: what profiling each pair in the world would measure, not a prediction.
        `utils`: the utilization predictions kept beside them (and named in the source)."""
        util = dict(utils._util) if utils is not None else {}
        source = f"{PROFILED_SOURCE}: {truth.name}" + (f"; utilization {utils.source}" if utils is not None else "")
        return cls(truth.pair_norms(), {}, util, source=source,
                   util_params=utils.util_params if utils is not None else "")

    @classmethod
    def from_truth(cls, truth: GroundTruth, utils: "Predictions | None" = None) -> "Predictions":
        """The measured pairs as 'predictions' (ORACLE: an upper bound, not a predictor)."""
        norms = truth.pair_norms()
        util = dict(utils._util) if utils is not None else {}
        return cls(norms, {}, util, source=f"ORACLE: {truth.name}", oracle=True,
                   util_params=utils.util_params if utils is not None else "")


def _require_range(values: dict, what: str, low: float, high: float, source: str, low_open: bool = False) -> None:
    """ValueError naming the first key whose value is not a real number in [low, high] ((low, high] when low_open;
    NaN and infinities included: a Predictions holds only usable values, an unpredicted pair has no entry)."""
    for key, value in values.items():
        ok = (isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
              and (low < value if low_open else low <= value) and value <= high)
        if not ok:
            interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"
            raise ValueError(f"predictions ({source}): {what} of {key} is {value!r}; expected a finite number in "
                             f"{interval}")


def pick_seed(frame: pd.DataFrame, seed: int | None, what: str) -> pd.DataFrame:
    """Rows of one prediction seed: `seed` if the file has it, else its smallest seed."""
    if "seed" not in frame.columns or frame.empty:
        return frame
    seeds = sorted(frame["seed"].unique())
    chosen = seed if seed in seeds else seeds[0]
    return frame[frame["seed"] == chosen]


def _predictor_rows(frame: pd.DataFrame, columns, predictor: str | None, what: str) -> pd.DataFrame:
    """The rows of one predictor, after checking the columns; an error naming the predictors there are."""
    require_columns(frame, columns, what)
    rows = frame[frame["predictor"] == predictor]
    if rows.empty:
        raise ValueError(f"{what}: no rows for predictor {predictor!r}; have {sorted(frame['predictor'].unique())}")
    return rows


def _refuse(rows: pd.DataFrame, column: str, bad: np.ndarray, what: str, expected: str) -> None:
    """Raise ValueError naming the first row where `bad` holds: its pair (or job type), seed and value."""
    if bad.any():
        row = rows.iloc[int(np.flatnonzero(bad)[0])]
        names = ("device", "workload_a", "workload_b") if "workload_a" in rows.columns else ("device", "workload")
        seed = f", seed {row['seed']}" if "seed" in rows.columns else ""
        raise ValueError(f"{what}: {tuple(row[n] for n in names)}{seed}: {column} = {row[column]}; "
                         f"expected {expected} ({int(bad.sum())} such rows)")


def _norm_dicts(rows: pd.DataFrame, what: str):
    """({key: norm}, {key: spread}, {keys predicted NaN}) with key = (device, workload, other)."""
    upper = 1.0 + TOLERANCE
    for column in ("pred_norm_a", "pred_norm_b"):
        values = rows[column].to_numpy(float)
        _refuse(rows, column, ~np.isnan(values) & ~((values > 0) & (values <= upper)), what,
                f"a normalized throughput in (0, {upper:g}] (sharing a GPU never speeds a job up), or NaN "
                f"for no prediction")
    has_std = {"pred_std_a", "pred_std_b"} <= set(rows.columns)
    columns = ["device", "workload_a", "workload_b", "pred_norm_a", "pred_norm_b"]
    if has_std:
        columns += ["pred_std_a", "pred_std_b"]
        for column in ("pred_std_a", "pred_std_b"):
            values = rows[column].to_numpy(float)
            _refuse(rows, column, (values < 0) | np.isposinf(values), what, "a spread >= 0, or NaN for none")
    table = directed(rows[columns])
    predicted = table[np.isfinite(table["pred_norm"].to_numpy(float))]
    unpredicted = set(zip(*(table.loc[~table.index.isin(predicted.index), c] for c in ("device", "workload", "other")), strict=True))
    norms = {key: min(max(value, FLOOR), 1.0) for key, value in keyed_mean(predicted, "pred_norm").items()}
    stds = {}
    if has_std:
        spread = predicted[np.isfinite(predicted["pred_std"].to_numpy(float))]
        stds = {key: max(value, 0.0) for key, value in keyed_mean(spread, "pred_std").items()}
    return norms, stds, unpredicted - set(norms)


def _util_dict(rows: pd.DataFrame, what: str):
    upper = 1.0 + TOLERANCE
    values = rows["pred_util"].to_numpy(float)
    _refuse(rows, "pred_util", ~((values >= 0) & (values <= upper)), what, f"a utilization in [0, {upper:g}]")
    rows = rows.groupby(["device", "workload"], as_index=False)["pred_util"].mean()
    return {(row.device, row.workload): min(max(float(row.pred_util), 0.0), 1.0)
            for row in rows.itertuples(index=False)}


def _params(rows: pd.DataFrame, what: str) -> str:
    """The predictor's parameters (JSON text) from an optional `params` column; '' when there is none."""
    if "params" not in rows.columns:
        return ""
    values = sorted({str(v) for v in rows["params"].dropna()})
    if len(values) > 1:
        raise ValueError(f"{what}: rows carry {len(values)} different params, e.g. {values[:2]}; expected one")
    return values[0] if values else ""
