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
from coloc.sim.predictions import FILES, Predictions


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines one run besides the tables."""

    trace: str
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


def parse_policy(policy: str, default_predictor: str = "") -> tuple[str, str]:
    """'coloc~lgbm' -> ('coloc', 'lgbm'); 'coloc' -> ('coloc', default_predictor)."""
    name, _, predictor = policy.partition("~")
    return name, predictor or default_predictor


def prediction_files(policy: str) -> list[str]:
    """Stems of the prediction files a run of `policy` reads ('predictions', 'utilization'), from its declared needs."""
    return [FILES[kind] for kind in policies.prediction_needs(parse_policy(policy)[0])]


def load_predictions(config: RunConfig, predictions_path: str | Path | None,
                     utilization_path: str | Path | None) -> Predictions | None:
    """The out-of-fold predictions a predictive policy reads (None for the others).

    A file the policy needs must exist; a file it can use (e.g. isacpp's utilization) is read when
    a path is given, and a path given that does not exist is an error, not a silent fallback.
    """
    name = parse_policy(config.policy)[0]
    declared = policies.info(name)
    if not policies.prediction_needs(name):
        return None
    chosen = {}
    for what, path in (("norm", predictions_path), ("util", utilization_path)):
        required = what in declared["needs"]
        if not (required or (what in declared["optional"] and path)):
            continue
        if not path or not Path(path).exists():
            role = "needs" if required else "is given, and would use,"
            raise FileNotFoundError(f"policy {config.policy!r} {role} the out-of-fold {what} predictions file "
                                    f"{str(path or '')!r}, which does not exist")
        chosen[what] = path
    return Predictions.from_files(chosen.get("norm"), chosen.get("util"), config.predictor_norm or None,
                                  config.predictor_util or None, seed=config.seed)


def make_policy(policy: str, truth: GroundTruth, params: dict | None = None):
    """The policy of a run ('<name>' or '<name>~<predictor>'); only a policy that declares the need
    "truth" (the oracle, an upper bound) is given the measured pairs."""
    name = parse_policy(policy)[0]
    extra = {"truth": truth} if "truth" in policies.info(name)["needs"] else {}
    made = policies.get(name, **extra, **(params or {}))
    made.name = policy
    return made


def run(config: RunConfig, trace_spec: dict, solo: pd.DataFrame, pairs: pd.DataFrame,
        trace_table: pd.DataFrame | None, predictions: Predictions | None = None,
        policy_params: dict | None = None) -> tuple[SimResult, pd.DataFrame, pd.DataFrame]:
    """Build the trace, simulate, and return (result, the jobs table, a one-row summary)."""
    truth = GroundTruth(solo, pairs, config.reference_device)
    workloads = [w for w in truth.workloads(config.device) if truth.has_solo(config.reference_device, w)]
    cost = pd.Series({w: 1.0 / truth.solo_tput(config.reference_device, w) for w in workloads})  # s per iteration
    trace = traces.build(trace_spec, trace_table, workloads, config.seed, config.load, config.gpus, cost)
    if predictions is not None and predictions.has_norm():
        predictions.require_pairs(truth, config.device, trace["workload"].unique())
    spec = ClusterSpec(((config.device, config.gpus),), config.gpus_per_node, config.max_jobs_per_gpu)
    policy = make_policy(config.policy, truth, policy_params)
    result = simulate(trace, truth, policy, spec, predictions, config.restart_cost_s, config.seed)
    jobs = result.jobs.assign(trace=config.trace, seed=config.seed, gpus=config.gpus, load=config.load)
    row = {**asdict(config), "kind": policy.kind,
           "prediction_source": predictions.source if predictions is not None else "none",
           "predictor_norm_params": predictions.norm_params if predictions is not None else "",
           "predictor_util_params": predictions.util_params if predictions is not None else "",
           "offered_load": traces.offered_load(trace, config.gpus),
           **metrics.summarize(result, config.gpus)}
    return result, jobs, pd.DataFrame([row])


SHOWN = ["jct_mean", "jct_median", "jct_p90", "jct_p99", "makespan", "queue_delay_mean", "queue_delay_p99",
         "gpu_util_mean", "effective_throughput", "colocated_share", "slowdown_mean", "decision_ms_per_job"]


def gather(paths) -> pd.DataFrame:
    """Concatenate Parquet tables (one per run)."""
    if not paths:
        raise ValueError("gather: no files given; expected the per-run outputs of the simulate rule")
    return pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)


def run_files(results_dir: str | Path, kind: str) -> list[str]:
    """Every run's `kind`.parquet under results_dir/<trace>/<policy>/<run>/, sorted."""
    return sorted(str(p) for p in Path(results_dir).glob(f"*/*/*/{kind}.parquet"))


def select(frame: pd.DataFrame, **equal) -> pd.DataFrame:
    """Rows whose columns equal the given values."""
    mask = pd.Series(True, index=frame.index)
    for column, value in equal.items():
        mask &= frame[column] == value
    return frame[mask]


def headline(summary: pd.DataFrame, trace: str, gpus: int, load: float) -> pd.DataFrame:
    """Runs of `trace` at `gpus` and `load`, falling back to the trace's largest cluster / highest load."""
    rows = select(summary, trace=trace)
    if rows.empty:
        raise ValueError(f"summary: no runs of trace {trace!r}; have {sorted(summary['trace'].unique())}")
    gpus = gpus if gpus in set(rows["gpus"]) else int(rows["gpus"].max())
    rows = rows[rows["gpus"] == gpus]
    load = load if load in set(rows["load"]) else float(rows["load"].max())
    return rows[rows["load"] == load]


def source_line(summary: pd.DataFrame) -> str:
    """Where the numbers come from, for titles."""
    devices = ",".join(sorted(summary["device"].unique()))
    protocols = ",".join(sorted(p for p in summary["protocol"].unique() if p))
    return f"truth: Gavel measured pairs ({devices}); predictions out-of-fold ({protocols or 'none'})"


def policy_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds of the main metrics per trace, cluster size, load and policy."""
    keys = ["trace", "gpus", "load", "policy", "kind", "predictor_norm", "predictor_util"]
    table = summary.groupby(keys, as_index=False)[SHOWN].mean()
    table.insert(len(keys), "seeds", summary.groupby(keys)["seed"].nunique().to_numpy())
    return table
