"""One simulation run as the workflow asks for it: tables in, per-job rows and a summary row out."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from coloc import datasets, policies
from coloc.policies.entry import PolicyEntry
from coloc.sim import metrics, traces
from coloc.sim.cluster import ClusterSpec
from coloc.sim.engine import SimResult, simulate
from coloc.sim.interference import GroundTruth, parse_world, world_label
from coloc.sim.predictions import FILES, Predictions


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines one run besides the tables.

    cluster: coloc.sim.cluster.ClusterSpec.parse text ("v100:64", or heterogeneous "v100:8,p100:4,k80:4";
    policies try the device types in this order).
    load: the Philly load factor / Poisson offered load; interval_s: seconds between testbed arrival
    groups; NaN where the trace does not use it. predictor_norm / predictor_util: the predictors the
    run reads (after a '~' override of the policy, coloc.policies.entry.PolicyEntry.predictors). dataset: the
    measured data whose pairs are the run's truth (:func:`truth_name`), and whose predictions the policies read. world:
    the interference world of the truth (coloc.sim.interference.parse_world: 'measured', 'flat:<s>', 'none'); memory
    fit stays the dataset's measured one in every world. max_jobs_per_gpu: the most jobs any policy may put on a
    GPU; None: no cap but memory (each policy's own limit still applies).
    """

    trace: str
    policy: str  # the policy's entry (coloc.policies.entry): its label in every table
    seed: int
    cluster: str
    load: float = math.nan
    interval_s: float = math.nan
    reference_device: str = "v100"
    gpus_per_node: int = 8
    max_jobs_per_gpu: int | None = 2
    restart_cost_s: float = 30.0
    protocol: str = ""
    predictor_norm: str = ""
    predictor_util: str = ""
    dataset: str = datasets.DEFAULT
    world: str = "measured"

    def __post_init__(self):
        if not isinstance(self.cluster, str):
            raise TypeError(f"RunConfig.cluster {self.cluster!r}: expected ClusterSpec.parse text such as 'v100:64'")
        parse_world(self.world, "RunConfig.world")

    def cluster_spec(self) -> ClusterSpec:
        return ClusterSpec.parse(self.cluster, gpus_per_node=self.gpus_per_node,
                                 max_jobs_per_gpu=self.max_jobs_per_gpu)


def prediction_files(policy: str) -> list[str]:
    """Stems of the prediction files a run of policy entry `policy` reads ('predictions', 'utilization'), from its
    declared needs."""
    return [FILES[kind] for kind in policies.prediction_needs(PolicyEntry.parse(policy).name)]


# The pseudo-protocol '<policy>@profiled-pairs': the paper's assumption (ISACPP's) that every pair was profiled
# before the policy schedules. The policy's pair "predictions" are the truth's pairs (the dataset's measured pairs
# in the measured world: what profiling each pair would measure), labelled so in every output like the oracle,
# never coloc's finding. A utilization a policy reads beside the pairs (none of today's policies reads both; isacpp
# reads pairs only) is the random5 out-of-fold prediction: the assumption profiles every job type, so the utilization
# model saw each job type in training (Gavel measured no utilization to stand in).
PROFILED_PAIRS = "profiled-pairs"
PROFILED_UTIL_PROTOCOL = "random5"


def file_protocols(policy: str, protocol: str) -> dict[str, str]:
    """{file stem ('predictions', 'utilization'): the protocol whose file a run of `policy` under `protocol` reads}:
    the files of its declared needs, under `protocol`; under PROFILED_PAIRS no pair file (the pairs are the
    truth's) and the utilization of PROFILED_UTIL_PROTOCOL."""
    if protocol != PROFILED_PAIRS:
        return {stem: protocol for stem in prediction_files(policy)}
    return {stem: PROFILED_UTIL_PROTOCOL for stem in prediction_files(policy) if stem != FILES["norm"]}


def load_predictions(config: RunConfig, predictions_path: str | Path | None,
                     utilization_path: str | Path | None, truth: GroundTruth | None = None) -> Predictions | None:
    """The out-of-fold predictions a predictive policy reads (None for the others); under the protocol
    PROFILED_PAIRS the `truth`'s pairs instead of a pair predictions file (labelled the paper's assumption).

    A file the policy needs must exist; a file it can use (e.g. isacpp's utilization) is read when
    a path is given, and a path given that does not exist is an error, not a silent fallback. A policy naming
    its protocol ('coloc@random5') reads only files named after it (the predictors stage's
    ``<protocol>.parquet``), so that a run is never labelled with one protocol and fed another's.
    """
    entry = PolicyEntry.parse(config.policy)
    name = entry.name
    declared = policies.info(name)
    if not policies.prediction_needs(name):
        return None
    profiled = config.protocol == PROFILED_PAIRS
    if profiled and "norm" not in policies.prediction_needs(name):
        raise ValueError(f"policy {config.policy!r}: protocol {PROFILED_PAIRS!r} gives measured pairs in place of "
                         f"pair predictions, and {name!r} reads none")
    if profiled and truth is None:
        raise ValueError(f"policy {config.policy!r}: protocol {PROFILED_PAIRS!r} reads the truth's pairs; give truth")
    expected = file_protocols(config.policy, config.protocol)
    chosen = {}
    for what, path in (("norm", predictions_path), ("util", utilization_path)):
        if profiled and what == "norm":
            if path:
                raise ValueError(f"policy {config.policy!r} reads the truth's pairs ({PROFILED_PAIRS}), not the pair "
                                 f"predictions file {str(path)!r}")
            continue
        required = what in declared["needs"]
        if not (required or (what in declared["optional"] and path)):
            continue
        if not path or not Path(path).exists():
            role = "needs" if required else "is given, and would use,"
            raise FileNotFoundError(f"policy {config.policy!r} {role} the out-of-fold {what} predictions file "
                                    f"{str(path or '')!r}, which does not exist")
        own = expected[FILES[what]]
        if entry.protocol and Path(path).stem != own:
            raise ValueError(f"policy {config.policy!r} reads {own!r} predictions, but its {what} file "
                             f"{str(path)!r} is not <folder>/{own}.parquet")
        chosen[what] = path
    if profiled:
        utils = Predictions.from_files(None, chosen["util"], None, config.predictor_util or None,
                                       seed=config.seed) if "util" in chosen else None
        return Predictions.from_profiled_pairs(truth, utils)
    return Predictions.from_files(chosen.get("norm"), chosen.get("util"), config.predictor_norm or None,
                                  config.predictor_util or None, seed=config.seed)


def make_policy(policy: str, truth: GroundTruth, params: dict | None = None):
    """The policy of a run, from its entry ('<name>[(<param>=<value>,...)][~<predictor>][@<protocol>]',
    coloc.policies.entry) with the entry's parameters (ValueError for one it does not declare, or of the wrong
    type) and `params` (what a study sets, e.g. coloc-probe's probes), named by the entry; only a policy that
    declares the need "truth" (the oracle, an upper bound) is given the measured pairs."""
    entry = PolicyEntry.parse(policy)
    problems = policies.parameter_problems(entry.name, entry.param_dict())
    if problems:
        raise ValueError(f"policy entry {policy!r}: " + "; ".join(problems))
    extra = {"truth": truth} if "truth" in policies.info(entry.name)["needs"] else {}
    made = policies.get(entry.name, **extra, **entry.param_dict(), **(params or {}))
    made.name = policy
    return made


def truth_name(dataset: str, world: str = "measured") -> str:
    """The label of a dataset's truth in `world` (its :attr:`coloc.datasets.Dataset.truth`): 'measured (Gavel)',
    'flat 20% (Gavel's memory fit)', ...; ValueError naming the datasets the simulator runs on."""
    if dataset not in datasets.simulated():
        raise ValueError(f"simulation dataset {dataset!r}: expected one of {sorted(datasets.simulated())}")
    return world_label(world, datasets.get(dataset).truth)


def cluster_workloads(truth: GroundTruth, spec: ClusterSpec, reference_device: str) -> list[str]:
    """Job types measured solo on every device type of the cluster and on the reference device, and next to some
    job type on each device type of the cluster, sorted. A job type never measured in a pair (Lucid's BERT,
    ResNet-50 and Transformer) is left out of the traces: it could never share a GPU, for want of data, not of
    memory, and drawing it would only thin out the sharing every policy is compared on. (Every Gavel job type was
    measured in pairs on every device.)"""
    devices = {device for device, _ in spec.devices} | {reference_device}
    return [w for w in truth.workloads(reference_device) if all(truth.has_solo(d, w) for d in devices)
            and all(truth.has_pairs(d, w) for d, _ in spec.devices)]


def run(config: RunConfig, trace_spec: dict, solo: pd.DataFrame, pairs: pd.DataFrame,
        trace_table: pd.DataFrame | None, predictions: Predictions | None = None,
        truth: GroundTruth | None = None
        ) -> tuple[SimResult, pd.DataFrame, pd.DataFrame]:
    """Build the trace, simulate, and return (result, the jobs table, a one-row summary).

    `truth`: the GroundTruth of (solo, pairs) on the reference device, when the caller already built it.
    """
    spec = config.cluster_spec()
    if truth is None:
        truth = GroundTruth(solo, pairs, config.reference_device, name=truth_name(config.dataset, config.world),
                            world=config.world)
    elif truth.reference_device != config.reference_device:
        raise ValueError(f"run: truth's reference device {truth.reference_device!r} is not the run's "
                         f"{config.reference_device!r}")
    elif truth.world != config.world:
        raise ValueError(f"run: truth's world {truth.world!r} is not the run's {config.world!r}")
    truth.require_devices([device for device, _ in spec.devices], f"cluster {config.cluster!r}")
    workloads = cluster_workloads(truth, spec, config.reference_device)
    if not workloads:
        raise ValueError(f"cluster {config.cluster!r}: no job type has a solo throughput on each of its devices "
                         f"and on the reference device {config.reference_device!r}")
    cost = pd.Series({w: 1.0 / truth.solo_tput(config.reference_device, w) for w in workloads})  # s per iteration
    widest = max(count for _, count in spec.devices)
    trace = traces.build(trace_spec, trace_table, workloads, config.seed, _given(config.load), spec.total_gpus,
                         cost, interval_s=_given(config.interval_s), max_job_gpus=widest)
    if predictions is not None and predictions.has_norm():
        for device, _ in spec.devices:
            predictions.require_pairs(truth, device, trace["workload"].unique())
    policy = make_policy(config.policy, truth)
    result = simulate(trace, truth, policy, spec, predictions, config.restart_cost_s, config.seed)
    keys = {"trace": config.trace, "seed": config.seed, "cluster": config.cluster, "gpus": spec.total_gpus,
            "load": config.load, "interval_s": config.interval_s, "world": config.world}
    jobs = result.jobs.assign(**keys)
    row = {**asdict(config), "gpus": spec.total_gpus, "kind": policy.kind,
           "prediction_source": predictions.source if predictions is not None else "none",
           "predictor_norm_params": predictions.norm_params if predictions is not None else "",
           "predictor_util_params": predictions.util_params if predictions is not None else "",
           "offered_load": traces.offered_load(trace, spec.total_gpus),
           "jobs_too_wide": int(trace.attrs.get("jobs_too_wide", 0)),
           **metrics.summarize(result, spec.total_gpus), **policy.summary_fields()}
    return result, jobs, pd.DataFrame([row])


def _given(value: float) -> float | None:
    """None for NaN (a key the trace does not use)."""
    return None if value is None or math.isnan(value) else float(value)


SHOWN = ["jct_mean", "jct_median", "jct_p90", "jct_p99", "makespan", "queue_delay_mean", "queue_delay_p99",
         "gpu_util_mean", "busy_share", "effective_throughput", "measured_util_mean", "colocated_share", "slowdown_mean",
         "decision_ms_per_job"]


def gather(paths) -> pd.DataFrame:
    """Concatenate Parquet tables (one per scenario x policy)."""
    if not paths:
        raise ValueError("gather: no files given; expected the outputs of the simulate rule")
    return pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)


def run_files(results_dir: str | Path, kind: str) -> list[str]:
    """Every (scenario, policy)'s `kind`.parquet under results_dir/<scenario>/<policy>/, sorted."""
    return sorted(str(p) for p in Path(results_dir).glob(f"*/*/{kind}.parquet"))


def select(frame: pd.DataFrame, **equal) -> pd.DataFrame:
    """Rows whose columns equal the given values."""
    mask = pd.Series(True, index=frame.index)
    for column, value in equal.items():
        mask &= frame[column] == value
    return frame[mask]


def headline(summary: pd.DataFrame, scenario: str, point: float) -> pd.DataFrame:
    """Runs of `scenario` at its sweep `point` (the config's headline)."""
    rows = select(summary, scenario=scenario)
    if rows.empty:
        raise ValueError(f"summary: no runs of scenario {scenario!r}; have {sorted(summary['scenario'].unique())}")
    picked = rows[rows["point"] == float(point)]
    if picked.empty:
        raise ValueError(f"summary: scenario {scenario!r} has no runs at point {point}; "
                         f"has {sorted(rows['point'].unique())}")
    return picked


def policy_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds of the main metrics per scenario, sweep point, interference world and policy."""
    world = ["world"] if "world" in summary.columns else []
    keys = ["scenario", "sweep", "point", "cluster", *world, "policy", "kind", "predictor_norm", "predictor_util"]
    table = summary.groupby(keys, as_index=False, sort=False)[SHOWN].mean()
    table.insert(len(keys), "seeds", summary.groupby(keys, sort=False)["seed"].nunique().to_numpy())
    return table
