"""The predictor stage end to end: load the tables, run every protocol, write the outputs.

Output files (in ``out_dir``): ``predictions_<protocol>.parquet`` and
``utilization_<protocol>.parquet`` for every protocol (empty, with their columns, when the
protocol does not apply to the data), plus the score tables the caller writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from coloc.datasets import family_of
from coloc.devices import device_table
from coloc.predict.base import Tables
from coloc.predict.evaluate import (PRED_COLUMNS, UTIL_COLUMNS, UTIL_SCORE_COLUMNS, Evaluation, evaluate, scores_of,
                                    summary, utilization_scores)
from coloc.predict.protocols import ProtocolSkipped


def load_tables(workloads_path, solo_path, pairs_path, families=None) -> Tables:
    """The tables of one data source, restricted to the job types it measured (and to ``families``).

    Solo rows without a positive finite throughput (a job that did not run alone) are
    dropped, and so are the pairs that involve them; the device table comes from
    :mod:`coloc.devices` for the devices named in ``solo``.
    """
    workloads = pd.read_parquet(workloads_path)
    solo = pd.read_parquet(solo_path)
    pairs = pd.read_parquet(pairs_path)
    if families:
        solo = solo[solo["workload"].map(family_of).isin(families)]
        pairs = pairs[pairs["workload_a"].map(family_of).isin(families) & pairs["workload_b"].map(family_of).isin(families)]
    ok = np.isfinite(solo["throughput"].astype(float)) & (solo["throughput"].astype(float) > 0)
    solo = solo[ok].reset_index(drop=True)
    known = set(zip(solo["device"], solo["workload"]))
    has_solo = [(d, a) in known and (d, b) in known
                for d, a, b in pairs[["device", "workload_a", "workload_b"]].itertuples(index=False)]
    pairs = pairs[has_solo].reset_index(drop=True)
    missing = sorted(set(solo["workload"]) - set(workloads["workload"]))
    if missing:
        raise KeyError(f"{workloads_path}: no feature row for job types {missing[:5]} measured in {solo_path}")
    workloads = workloads[workloads["workload"].isin(solo["workload"])].reset_index(drop=True)
    return Tables(workloads, solo, pairs, device_table(sorted(solo["device"].unique())))


@dataclass
class StageResult:
    """Evaluations of one data source, the protocols skipped (with reasons) and the score tables."""

    source: str
    evaluations: dict[str, Evaluation] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def scores(self) -> pd.DataFrame:
        frames = [scores_of(ev) for ev in self.evaluations.values()]
        frames = [f for f in frames if not f.empty]
        return pd.concat(frames, ignore_index=True).assign(dataset=self.source) if frames else pd.DataFrame()

    def util_scores(self) -> pd.DataFrame:
        """Horus's utilization scores of every protocol (empty, with the columns, when Horus was not run)."""
        frames = [utilization_scores(ev.utilization, p) for p, ev in self.evaluations.items() if len(ev.utilization)]
        if not frames:
            return pd.DataFrame(columns=UTIL_SCORE_COLUMNS + ["dataset"])
        return pd.concat(frames, ignore_index=True).assign(dataset=self.source)

    def summary(self) -> pd.DataFrame:
        scores = self.scores()
        return summary(scores).assign(dataset=self.source) if not scores.empty else pd.DataFrame()

    def notes(self) -> list[str]:
        out = [f"{self.source}: {p} skipped: {why}" for p, why in self.skipped.items()]
        for ev in self.evaluations.values():
            out += [f"{self.source}: {line}" for line in ev.skipped]
        return out


def run_stage(tables: Tables, source: str, protocols, predictors: dict, seeds, k: int = 5, workers: int = 1,
              progress: bool = True) -> StageResult:
    """Every protocol on one data source; a protocol that does not apply is skipped with its reason."""
    out = StageResult(source)
    for protocol in protocols:
        try:
            out.evaluations[protocol] = evaluate(tables, protocol, predictors, seeds, k, workers, progress)
        except ProtocolSkipped as err:
            out.skipped[protocol] = str(err)
    return out


def write_predictions(result: StageResult, out_dir, protocols) -> list[Path]:
    """predictions_<protocol>.parquet and utilization_<protocol>.parquet for every protocol."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for protocol in protocols:
        ev = result.evaluations.get(protocol)
        pred = ev.predictions if ev is not None else pd.DataFrame(columns=PRED_COLUMNS)
        util = ev.utilization if ev is not None else pd.DataFrame(columns=UTIL_COLUMNS)
        for name, frame in ((f"predictions_{protocol}.parquet", pred), (f"utilization_{protocol}.parquet", util)):
            path = out_dir / name
            frame.to_parquet(path, index=False)
            written.append(path)
    return written
