"""One simulation run as the workflow asks for it: tables in, per-job rows and a summary row out."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from coloc import policies
from coloc.sim import metrics, traces
from coloc.sim.cluster import ClusterSpec
from coloc.sim.engine import SimResult, simulate
from coloc.sim.interference import GroundTruth
from coloc.sim.predictions import Predictions


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines one run besides the tables."""

    trace_name: str
    policy: str
    seed: int
    gpus: int
    load: float
    device: str = "v100"
    reference_device: str = "v100"
    gpus_per_node: int = 8
    max_jobs_per_gpu: int = 2
    restart_cost_s: float = 30.0
    protocol: str = ""
    predictor_norm: str = ""
    predictor_util: str = ""


def load_predictions(config: RunConfig, predictions_path: str | Path | None,
                     utilization_path: str | Path | None) -> Predictions | None:
    """The out-of-fold predictions a predictive policy needs (None for the others)."""
    policy = policies.get(config.policy)
    if not policy.needs:
        return None
    paths = {"norm": predictions_path, "util": utilization_path}
    chosen = {}
    for what, path in paths.items():
        if what in policy.needs:
            if not path or not Path(path).exists():
                raise FileNotFoundError(f"policy {config.policy!r} needs the out-of-fold {what} "
                                        f"predictions file {path!r}")
            chosen[what] = path
        elif what in policy.optional and path and Path(path).exists():
            chosen[what] = path
    return Predictions.from_files(chosen.get("norm"), chosen.get("util"), config.predictor_norm or None,
                                  config.predictor_util or None, seed=config.seed)


def run(config: RunConfig, trace_spec: dict, solo: pd.DataFrame, pairs: pd.DataFrame,
        trace_table: pd.DataFrame | None, predictions: Predictions | None = None,
        policy_params: dict | None = None) -> tuple[SimResult, pd.DataFrame, pd.DataFrame]:
    """Build the trace, simulate, and return (result, the jobs table, a one-row summary)."""
    truth = GroundTruth(solo, pairs, config.reference_device)
    workloads = [w for w in truth.workloads(config.device) if truth.has_solo(config.reference_device, w)]
    trace = traces.build(trace_spec, trace_table, workloads, config.seed, config.load, config.gpus)
    if predictions is not None and predictions.has_norm():
        missing = predictions.missing_pairs(truth, config.device, trace["workload"].unique())
        if missing:
            raise ValueError(f"predictions ({predictions.source}) lack {len(missing)} feasible pairs on "
                             f"{config.device} used by the trace, e.g. {missing[:5]}")
    spec = ClusterSpec(((config.device, config.gpus),), config.gpus_per_node, config.max_jobs_per_gpu)
    policy = policies.get(config.policy, **(policy_params or {}))
    result = simulate(trace, truth, policy, spec, predictions, config.restart_cost_s, config.seed)
    jobs = result.jobs.assign(trace=config.trace_name, seed=config.seed, gpus=config.gpus, load=config.load)
    row = {**asdict(config), "kind": policy.kind,
           "prediction_source": predictions.source if predictions is not None else "none",
           "offered_load": traces.offered_load(trace, config.gpus),
           **metrics.summarize(result, config.gpus)}
    return result, jobs, pd.DataFrame([row])
