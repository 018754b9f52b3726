"""Scenarios: the named experiments of the simulation stage (config ``simulation.scenario_specs``).

A scenario is a trace spec, a cluster (``ClusterSpec.parse`` text, heterogeneous allowed), its policies
and seeds, and ONE swept key: ``load`` (Philly load factor, Poisson offered load), ``interval_s``
(seconds between testbed arrival groups) or ``gpus`` (the size of a one-device-type cluster). For one
policy its runs are every seed x sweep point; :func:`run_policy` simulates them in-process and writes
each finished run to a work folder as it goes, whole or not at all, so that a rerun of the same
definition on the same inputs and code skips the runs already finished (resume).

Every table a run gives carries the key columns ``scenario``, ``policy``, ``seed``, ``sweep`` (the swept
key's name) and ``point`` (its value).

A scenario names its measured data with ``dataset`` (:data:`DATASETS`; default ``gavel``): ``lucid`` replays
Lucid's RTX 3090 pairs, its reference device ``rtx3090``, its policies reading the ``lucid`` predictions. A spec
may also set its own ``max_jobs_per_gpu`` (null: no cap but memory), ``predictor_norm``, ``predictor_util``,
``util_bin_s`` and ``world`` (the interference world, coloc.sim.interference.parse_world) over the simulation
section's (:func:`settings_of`); the resume fingerprint holds both, so a run of another world is never read back.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

import coloc
from coloc import datasets
from coloc.policies.entry import PolicyEntry
from coloc.sim.cluster import ClusterSpec
from coloc.sim.interference import GroundTruth
from coloc.sim.metrics import utilization_series
from coloc.studies import experiment

SWEEP_KEYS = ("load", "interval_s", "gpus")
TABLES = ("summary", "jobs", "utilization")
SETTINGS = ("reference_device", "max_jobs_per_gpu", "restart_cost_s", "protocol", "predictor_norm",
            "predictor_util", "util_bin_s", "world")  # the simulation section's keys shared by every scenario
SOURCE_SWEEPS = {"philly": ("load", "gpus"), "poisson": ("load", "gpus"), "testbed": ("interval_s", "gpus")}
SPEC_SETTINGS = ("max_jobs_per_gpu", "predictor_norm", "predictor_util", "util_bin_s", "world")  # a spec's own


def dataset_of(spec: Mapping) -> str:
    """The scenario's measured data (``dataset``, default :data:`coloc.datasets.DEFAULT`): a registered dataset
    the simulator runs on (:func:`coloc.datasets.simulated`); ValueError for another."""
    dataset = spec.get("dataset", datasets.DEFAULT)
    if dataset not in datasets.simulated():
        raise ValueError(f"scenario dataset {dataset!r}: expected one of {sorted(datasets.simulated())}")
    return dataset


def settings_of(spec: Mapping, settings: Mapping) -> dict:
    """The simulation section's shared settings as the scenario uses them: its dataset's reference device, and
    its own values of :data:`SPEC_SETTINGS` where it sets them."""
    out = {"world": "measured", **settings}
    out.update({key: spec[key] for key in SPEC_SETTINGS if key in spec})
    reference = datasets.get(dataset_of(spec)).reference_device
    if reference is not None:
        out["reference_device"] = reference
    return out


@dataclass(frozen=True)
class Point:
    """One run of a scenario for a policy: a seed and the swept key's value."""

    seed: int
    sweep: str
    point: float

    @property
    def name(self) -> str:
        """The run's folder name, e.g. 'seed3_interval_s250': the value short (``:g``) where that reads back as
        exactly the value, else in full (``repr``), so that distinct values never share a folder (1000000 is
        'gpus1e+06', 1000001 'gpus1000001.0')."""
        short = f"{self.point:g}"
        return f"seed{self.seed}_{self.sweep}{short if float(short) == self.point else repr(float(self.point))}"


def sweep_of(spec: Mapping) -> tuple[str, list[float]]:
    """(swept key, its points) of a scenario spec."""
    sweep = spec["sweep"]
    if len(sweep) != 1 or next(iter(sweep)) not in SWEEP_KEYS:
        raise ValueError(f"scenario sweep {dict(sweep)}: expected exactly one key of {list(SWEEP_KEYS)}")
    key, values = next(iter(sweep.items()))
    return key, [float(v) for v in values]


def points(spec: Mapping) -> list[Point]:
    """Every run of the scenario for one policy: seeds x sweep points, seed-major."""
    key, values = sweep_of(spec)
    runs = [Point(int(seed), key, value) for seed in spec["seeds"] for value in values]
    names = [run.name for run in runs]
    for i, name in enumerate(names):
        if name in names[:i]:  # two seeds or two points alike after float(): one folder, one run read twice
            raise ValueError(f"scenario sweep {key}: the runs {runs[names.index(name)]} and {runs[i]} share the "
                             f"folder name {name!r}; expected distinct seeds and sweep values")
    return runs


def cluster_at(cluster: str, gpus: int | None = None) -> str:
    """The cluster text, with its size set to `gpus` when the scenario sweeps gpus (one device type only)."""
    if gpus is None:
        return cluster
    devices = ClusterSpec.parse(cluster).devices
    if len(devices) != 1:
        raise ValueError(f"cluster {cluster!r}: sweeping gpus needs a cluster of one device type, "
                         f"not {len(devices)}")
    return f"{devices[0][0]}:{int(gpus)}"


def run_config(policy: str, spec: Mapping, settings: Mapping, point: Point) -> experiment.RunConfig:
    """The RunConfig of one run: the scenario spec at `point`, the shared settings (as the scenario sets them,
    :func:`settings_of`), the policy's predictors."""
    settings = settings_of(spec, settings)
    trace = spec["trace"]
    source = trace["source"]
    if point.sweep not in SOURCE_SWEEPS.get(source, ()):
        raise ValueError(f"scenario trace source {source!r} cannot sweep {point.sweep!r}; "
                         f"expected one of {list(SOURCE_SWEEPS.get(source, ()))}")
    value = {point.sweep: point.point}
    load = value.get("load", trace.get("load", 1.0)) if source != "testbed" else math.nan
    interval = value.get("interval_s", trace.get("interval_s", 0.0)) if source == "testbed" else math.nan
    gpus = int(point.point) if point.sweep == "gpus" else None
    entry = PolicyEntry.parse(policy)
    norm, util = entry.predictors(settings["predictor_norm"], settings["predictor_util"])
    protocol = entry.protocol_or(settings["protocol"])
    if protocol == experiment.PROFILED_PAIRS:
        norm = experiment.PROFILED_PAIRS  # (no pair predictor: the truth's pairs, the paper's assumption)
    return experiment.RunConfig(
        trace=source, policy=policy, seed=point.seed, cluster=cluster_at(spec["cluster"], gpus),
        load=float(load), interval_s=float(interval), reference_device=settings["reference_device"],
        gpus_per_node=int(spec["gpus_per_node"]), max_jobs_per_gpu=cap_of(settings["max_jobs_per_gpu"]),
        restart_cost_s=float(settings["restart_cost_s"]), protocol=protocol,
        predictor_norm=norm, predictor_util=util, dataset=dataset_of(spec), world=settings["world"])


def cap_of(value) -> int | None:
    """A max_jobs_per_gpu setting as the simulator takes it: an int, or None (null: no cap but memory)."""
    return None if value is None else int(value)


def trace_spec(spec: Mapping) -> dict:
    """The scenario's trace entry as coloc.sim.traces.build takes it (its load / interval_s are passed apart)."""
    return {k: v for k, v in spec["trace"].items() if k not in ("load", "interval_s")}


def fingerprint(definition: Mapping, files) -> str:
    """A hash of a run set's definition (JSON), the bytes of its input files and the coloc library's code."""
    digest = hashlib.sha256(json.dumps(definition, sort_keys=True, default=str).encode())
    code = sorted(Path(coloc.__file__).parent.rglob("*.py"))
    for path in [*(Path(f) for f in files if f), *code]:
        digest.update(str(path.name).encode())
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def resume_folder(work_dir: str | Path, scenario: str, policy: str, spec: Mapping, settings: Mapping,
                  files) -> Path:
    """Where `run_policy` keeps the finished runs of this definition: work_dir/<fingerprint>/, the
    fingerprint over scenario, policy, spec, settings, the input files given that exist, and the code."""
    definition = {"scenario": scenario, "policy": policy, "spec": spec, "settings": dict(settings)}
    return Path(work_dir) / fingerprint(definition, [f for f in files if f and Path(f).is_file()])


def clear(work_dir: str | Path) -> None:
    """Remove the finished runs (after their tables are saved): nothing stale stays behind."""
    shutil.rmtree(work_dir, ignore_errors=True)


def run_policy(scenario: str, policy: str, spec: Mapping, settings: Mapping, solo: pd.DataFrame,
               pairs: pd.DataFrame, trace_table: pd.DataFrame | None, predictions_path: str = "",
               utilization_path: str = "", work_dir: str | Path | None = None,
               log: Callable[[str], None] = print, memory_source: str = "measured") -> dict[str, pd.DataFrame]:
    """Every run (seed x sweep point) of `policy` in `scenario`: {'summary', 'jobs', 'utilization'} tables.

    With `work_dir`, each finished run's three tables are written to work_dir/<point name>/ (a run's
    folder appears whole, by one rename) and a run whose folder exists is read back instead of run
    again. The caller points `work_dir` at a folder named by :func:`fingerprint` of everything the
    runs depend on, so that no stale run is ever read back. `memory_source`: where the solo table's `mem_bytes`
    (the jobs' declared memory) came from (coloc.memory.with_memory).
    """
    tables: dict[str, list[pd.DataFrame]] = {name: [] for name in TABLES}
    clusters = spec["trace"].get("clusters") if spec["trace"]["source"] == "philly" else None
    if clusters and trace_table is not None and "cluster" in trace_table.columns:
        trace_table = trace_table[trace_table["cluster"].isin(clusters)]  # once, not per run (same selection)
    predictions_by_seed: dict[int, object] = {}
    # one for every run (it only reads the tables)
    shared = settings_of(spec, settings)
    truth = GroundTruth(solo, pairs, shared["reference_device"], memory_source=memory_source, world=shared["world"],
                        name=experiment.truth_name(dataset_of(spec), shared["world"]))
    for point in points(spec):
        done = Path(work_dir) / point.name if work_dir else None
        if done is not None and done.is_dir():
            parts = {name: pd.read_parquet(done / f"{name}.parquet") for name in TABLES}
            log(f"{scenario} {policy} {point.name}: finished before, read back")
        else:
            config = run_config(policy, spec, settings, point)
            if point.seed not in predictions_by_seed:
                predictions_by_seed[point.seed] = experiment.load_predictions(config, predictions_path,
                                                                              utilization_path, truth)
            parts = run_point(scenario, config, point, spec, settings, solo, pairs, trace_table,
                              predictions_by_seed[point.seed], truth)
            if done is not None:
                _write_whole(parts, done)
            row = parts["summary"].iloc[0]
            log(f"{scenario} {policy} {point.name}: jct_mean {row['jct_mean']:.0f} s, makespan "
                f"{row['makespan']:.0f} s, busy {row['busy_share']:.2f}, {row['sim_wall_s']:.2f} s")
        for name in TABLES:
            tables[name].append(parts[name])
    return {name: pd.concat(frames, ignore_index=True) for name, frames in tables.items()}


def run_point(scenario: str, config: experiment.RunConfig, point: Point, spec: Mapping, settings: Mapping,
              solo: pd.DataFrame, pairs: pd.DataFrame, trace_table: pd.DataFrame | None, predictions,
              truth: GroundTruth | None = None) -> dict[str, pd.DataFrame]:
    """One run's three tables, each with the scenario's key columns first."""
    result, jobs, summary = experiment.run(config, trace_spec(spec), solo, pairs, trace_table, predictions,
                                           truth=truth)
    keys = {"scenario": scenario, "policy": config.policy, "seed": point.seed, "sweep": point.sweep,
            "point": point.point}
    gpus = int(summary["gpus"].iloc[0])
    bin_s = float(settings_of(spec, settings)["util_bin_s"])
    utilization = utilization_series(result.timeline, gpus, bin_s).assign(
        trace=config.trace, cluster=config.cluster, gpus=gpus, load=config.load, interval_s=config.interval_s)
    return {name: _keyed(frame, keys) for name, frame in
            (("summary", summary), ("jobs", jobs), ("utilization", utilization))}


def _keyed(frame: pd.DataFrame, keys: Mapping) -> pd.DataFrame:
    rest = frame.drop(columns=[k for k in keys if k in frame.columns])
    return pd.concat([pd.DataFrame({k: [v] * len(frame) for k, v in keys.items()}, index=frame.index), rest], axis=1)


def _write_whole(parts: Mapping[str, pd.DataFrame], folder: Path) -> None:
    """Write the tables into a hidden sibling folder, then rename it to `folder` (all or nothing)."""
    staging = folder.with_name(f".partial-{folder.name}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name, frame in parts.items():
        frame.to_parquet(staging / f"{name}.parquet", index=False)
    os.replace(staging, folder)
