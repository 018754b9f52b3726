"""Traces for the simulator: slices of the Philly trace table, synthetic Poisson traces, and testbed batches.

`load` scales arrivals: submit times are divided by it, so load 2 packs the
same jobs into half the time (inter-arrival times halved). For the Poisson
trace `load` is the offered GPU load relative to the cluster: arrivals come at
rate load x GPUs / E[duration x GPUs]. The testbed trace (the shape of
ISACPP's real-cluster experiment) has no load: its jobs arrive a few at a
time, one group every `interval_s` seconds.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from coloc.datasets import assign_workloads, family_of
from coloc.sim.checks import MAX_TIME_S
from coloc.sim.interference import require_columns
from coloc.sim.job import Job

TRACE_COLUMNS = ("job_id", "submit_time", "duration", "num_gpus", "workload")
MIN_DURATION_S = 1e-3  # the shortest exclusive duration a trace may give (shorter ones vanish in the clock's steps)
EXACT_FLOAT_ID = 2 ** 53  # a job id given as a float must be a whole number below this in magnitude (exact)
INT64 = (-2 ** 63, 2 ** 63 - 1)  # job ids and GPU counts are int64 in the jobs table
PHILLY_KEYS = {"source", "clusters", "start_s", "end_s", "n_jobs", "assign", "families"}
POISSON_KEYS = {"source", "n_jobs", "median_duration_s", "duration_sigma", "gpu_mix", "families", "load"}
TESTBED_KEYS = {"source", "n_jobs", "group_size", "median_duration_s", "duration_sigma", "gpu_mix", "families",
                "interval_s"}
PHILLY_KEYS = PHILLY_KEYS | {"load"}  # a spec's `load` / `interval_s`: the value when the scenario sweeps another key


def select(trace: pd.DataFrame, clusters: Sequence[str] | None = None, start_s: float | None = None,
           end_s: float | None = None, n_jobs: int | None = None, max_gpus: int | None = None) -> pd.DataFrame:
    """Jobs of `clusters`, submitted in [start_s, end_s), at most `max_gpus` GPUs, first `n_jobs`.

    Submit times are re-based so the first kept job arrives at 0. The number of jobs of the window
    dropped for being wider than `max_gpus` is kept in `attrs["jobs_too_wide"]` (the summary counts them).
    """
    require_columns(trace, TRACE_COLUMNS, "trace table")
    out = trace.sort_values(["submit_time", "job_id"], kind="stable")
    if clusters:
        if "cluster" not in out.columns:
            raise ValueError("trace table: clusters requested but there is no 'cluster' column")
        unknown = sorted(set(clusters) - set(out["cluster"]))
        if unknown:
            raise ValueError(f"trace table: clusters {unknown} not present; have {sorted(out['cluster'].unique())}")
        out = out[out["cluster"].isin(list(clusters))]
    if start_s is not None:
        out = out[out["submit_time"] >= start_s]
    if end_s is not None:
        out = out[out["submit_time"] < end_s]
    too_wide = 0
    if max_gpus is not None:
        wide = out["num_gpus"] > max_gpus
        if n_jobs is not None and (~wide).sum() > int(n_jobs):
            last_kept = out.loc[~wide, "submit_time"].iloc[int(n_jobs) - 1]
            wide &= out["submit_time"] <= last_kept
        too_wide = int(wide.sum())
        out = out[out["num_gpus"] <= max_gpus]
    if n_jobs is not None:
        out = out.head(int(n_jobs))
    if out.empty:
        raise ValueError(f"trace table: no job left after selecting clusters={clusters}, "
                         f"window=[{start_s}, {end_s}), max_gpus={max_gpus}, n_jobs={n_jobs}")
    out = out.reset_index(drop=True)
    out["submit_time"] = out["submit_time"] - out["submit_time"].iloc[0]
    out.attrs["jobs_too_wide"] = too_wide
    return out


def scale_load(trace: pd.DataFrame, load: float) -> pd.DataFrame:
    """Divide submit times by `load` (> 0): load 2 halves every inter-arrival time."""
    if not (load > 0 and math.isfinite(load)):
        raise ValueError(f"load factor {load}: expected a positive number")
    out = trace.copy()
    out["submit_time"] = out["submit_time"] / load
    return out


def reassign_workloads(trace: pd.DataFrame, workloads: Sequence[str], seed: int, rule: str = "uniform",
                       workload_cost: pd.Series | None = None) -> pd.DataFrame:
    """Redraw every job's workload with `seed` by coloc.datasets.assign_workloads's `rule`.

    'uniform' (Gavel's rule) or 'gpu_time' (long jobs get costly workloads; needs `workload_cost`).
    """
    out = trace.copy()
    out["workload"] = assign_workloads(out, workloads, rule, seed, workload_cost)
    return out


def poisson(n_jobs: int, workloads: Sequence[str], seed: int, load: float, total_gpus: int,
            median_duration_s: float = 1800.0, duration_sigma: float = 1.0,
            gpu_mix: Mapping[int, float] | None = None) -> pd.DataFrame:
    """Synthetic trace: Poisson arrivals, log-normal durations, GPU counts drawn from `gpu_mix`.

    Each randomness source (arrivals, durations, GPU counts, workloads) has its
    own generator spawned from `seed`.
    """
    if n_jobs < 1 or total_gpus < 1 or not workloads:
        raise ValueError(f"poisson trace: n_jobs={n_jobs}, total_gpus={total_gpus}, "
                         f"{len(workloads)} workloads; expected all >= 1")
    sizes, probs = _gpu_mix(gpu_mix, total_gpus, "poisson")
    arrivals, durations, gpus, kinds = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4))
    mean_gpu_time = median_duration_s * math.exp(duration_sigma ** 2 / 2) * float(sizes @ probs)
    rate = load * total_gpus / mean_gpu_time
    gaps = arrivals.exponential(1.0 / rate, size=n_jobs)
    gaps[0] = 0.0
    return pd.DataFrame({
        "job_id": np.arange(n_jobs),
        "submit_time": np.cumsum(gaps),
        "duration": np.maximum(1.0, np.round(durations.lognormal(math.log(median_duration_s), duration_sigma, n_jobs))),
        "num_gpus": gpus.choice(sizes, size=n_jobs, p=probs),
        "workload": kinds.choice(np.array(sorted(workloads), dtype=object), size=n_jobs),
        "cluster": "poisson",
    })


def testbed(n_jobs: int, workloads: Sequence[str], seed: int, interval_s: float, group_size: int = 3,
            median_duration_s: float = 1800.0, duration_sigma: float = 0.8,
            gpu_mix: Mapping[int, float] | None = None, max_job_gpus: int = 1) -> pd.DataFrame:
    """The shape of ISACPP's real-cluster experiment: `n_jobs` jobs arriving `group_size` at a time.

    Group k (jobs k x group_size ... , in job-id order) is submitted at k x `interval_s`; interval 0
    submits every job at once. A job's type is drawn uniformly from `workloads` (Gavel's measured job
    types); its duration, the exclusive run time on the reference device, is log-normal with median
    `median_duration_s` and log standard deviation `duration_sigma` (the default, median 30 min and
    sigma 0.8, gives a 10-90% range of about 11 min to 1.4 h: ISACPP's jobs train for minutes to hours;
    the paper lists types and epochs, not run times), rounded to whole seconds (>= 1); its GPU count is
    drawn from `gpu_mix` ({GPUs: weight}, default all single-GPU, as in co-location testbeds). Each
    randomness source (durations, GPU counts, workloads) has its own generator spawned from `seed`, so
    the same seed gives the same jobs at every interval.
    """
    if n_jobs < 1 or group_size < 1 or not workloads:
        raise ValueError(f"testbed trace: n_jobs={n_jobs}, group_size={group_size}, {len(workloads)} workloads; "
                         f"expected all >= 1")
    if not (math.isfinite(interval_s) and interval_s >= 0):
        raise ValueError(f"testbed trace: interval_s {interval_s}; expected a finite number >= 0")
    sizes, probs = _gpu_mix(gpu_mix, max_job_gpus, "testbed")
    durations, gpus, kinds = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    ids = np.arange(n_jobs)
    return pd.DataFrame({
        "job_id": ids,
        "submit_time": (ids // group_size) * float(interval_s),
        "duration": np.maximum(1.0, np.round(durations.lognormal(math.log(median_duration_s), duration_sigma, n_jobs))),
        "num_gpus": gpus.choice(sizes, size=n_jobs, p=probs),
        "workload": kinds.choice(np.array(sorted(workloads), dtype=object), size=n_jobs),
        "cluster": "testbed",
    })


def _gpu_mix(gpu_mix: Mapping | None, max_gpus: int, trace: str) -> tuple[np.ndarray, np.ndarray]:
    """GPU counts and their probabilities from {GPUs: weight} (default: all single-GPU)."""
    mix = {int(k): float(v) for k, v in (gpu_mix or {1: 1.0}).items()}
    if any(g < 1 or g > max_gpus or p < 0 for g, p in mix.items()) or sum(mix.values()) <= 0:
        raise ValueError(f"{trace} trace: gpu_mix {mix}: expected GPU counts in [1, {max_gpus}] "
                         f"with non-negative weights")
    sizes = np.array(sorted(mix))
    return sizes, np.array([mix[g] for g in sizes]) / sum(mix.values())


def build(spec: Mapping, table: pd.DataFrame | None, workloads: Sequence[str], seed: int,
          load: float | None, total_gpus: int, workload_cost: pd.Series | None = None, *,
          interval_s: float | None = None, max_job_gpus: int | None = None) -> pd.DataFrame:
    """The trace a run simulates, from a scenario's `trace` entry `spec` (config `simulation.scenario_specs`).

    source 'philly': keys clusters, start_s, end_s, n_jobs, assign ('table' keeps
    the table's job types; 'uniform' or 'gpu_time' redraw them with `seed`, the
    latter by `workload_cost`); submit times divided by `load`. source 'poisson': keys n_jobs,
    median_duration_s, duration_sigma, gpu_mix ({GPUs: weight}); `load` is the offered GPU load.
    source 'testbed' (:func:`testbed`): keys n_jobs, group_size, median_duration_s, duration_sigma,
    gpu_mix; groups arrive every `interval_s`. All take `families`: draw job types only from these
    model families (e.g. the ones a small predictor run covers). A spec's own `load` / `interval_s`
    key is the value a scenario uses when it sweeps another key; the caller passes it here.
    Jobs wider than `max_job_gpus` (default `total_gpus`; the most GPUs of one device type on a
    heterogeneous cluster) are dropped from Philly (their count in `attrs["jobs_too_wide"]`) and refused in a
    synthetic gpu_mix.
    """
    source = spec.get("source")
    workloads = _of_families(spec, workloads)
    widest = int(max_job_gpus or total_gpus)
    if source in ("philly", "poisson") and not (load is not None and load > 0 and math.isfinite(load)):
        raise ValueError(f"trace spec source {source!r}: load {load}; expected a positive number")
    if source == "philly":
        _check_keys(spec, PHILLY_KEYS)
        if table is None:
            raise ValueError("trace spec source 'philly' needs the trace table")
        trace = select(table, spec.get("clusters") or None, spec.get("start_s"), spec.get("end_s"),
                       spec.get("n_jobs"), max_gpus=widest)
        too_wide = trace.attrs["jobs_too_wide"]
        assign = spec.get("assign", "table")
        if assign in ("uniform", "gpu_time"):
            trace = reassign_workloads(trace, workloads, seed, assign, workload_cost)
        elif assign != "table":
            raise ValueError(f"trace spec: assign={assign!r}; expected 'table', 'uniform' or 'gpu_time'")
        elif spec.get("families"):
            raise ValueError(f"trace spec {dict(spec)}: 'families' needs assign 'uniform' or 'gpu_time', not 'table'")
        trace = scale_load(trace, load)
        trace.attrs["jobs_too_wide"] = too_wide
        return trace
    if source == "poisson":
        _check_keys(spec, POISSON_KEYS)
        if any(int(g) > widest for g in (spec.get("gpu_mix") or {})):
            raise ValueError(f"trace spec {dict(spec)}: gpu_mix asks for more than {widest} GPUs, "
                             f"the most of one device type in the cluster")
        return poisson(int(spec.get("n_jobs", 1000)), workloads, seed, load, total_gpus,
                       float(spec.get("median_duration_s", 1800.0)), float(spec.get("duration_sigma", 1.0)),
                       spec.get("gpu_mix"))
    if source == "testbed":
        _check_keys(spec, TESTBED_KEYS)
        if interval_s is None:
            raise ValueError(f"trace spec {dict(spec)}: source 'testbed' needs interval_s (seconds between groups)")
        return testbed(int(spec.get("n_jobs", 51)), workloads, seed, float(interval_s), int(spec.get("group_size", 3)),
                       float(spec.get("median_duration_s", 1800.0)), float(spec.get("duration_sigma", 0.8)),
                       spec.get("gpu_mix"), widest)
    raise ValueError(f"trace spec: source={source!r}; expected 'philly', 'poisson' or 'testbed'")


def _of_families(spec: Mapping, workloads: Sequence[str]) -> list[str]:
    families = spec.get("families")
    if not families:
        return list(workloads)
    kept = [w for w in workloads if family_of(w) in set(families)]
    if not kept:
        raise ValueError(f"trace spec {dict(spec)}: no workload of families {list(families)} among {sorted(workloads)}")
    return kept


def _check_keys(spec: Mapping, allowed: set[str]) -> None:
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ValueError(f"trace spec {dict(spec)}: unknown keys {unknown}; allowed {sorted(allowed)}")


def offered_load(trace: pd.DataFrame, total_gpus: int) -> float:
    """GPU-seconds asked for per GPU-second available between the first and last arrival."""
    span = float(trace["submit_time"].max() - trace["submit_time"].min())
    work = float((trace["duration"] * trace["num_gpus"]).sum())
    return math.inf if span <= 0 else work / (span * total_gpus)


def jobs_from_trace(trace: pd.DataFrame, profile, spec) -> dict[int, Job]:
    """{job_id: Job} for a simulation, refusing a bad trace up front with the job, column and value.

    Job ids and GPU counts must be integers in int64's range (not booleans; 3.0 is taken as 3, a float only below
    2**53, where it is exact), submit times in [0, MAX_TIME_S], durations in [MIN_DURATION_S, MAX_TIME_S] seconds;
    every job type must run on the reference device and the cluster must have enough GPUs that run it.
    `profile`: a coloc.sim.view.Profile; `spec`: a ClusterSpec.
    """
    require_columns(trace, TRACE_COLUMNS, "trace table")
    if trace.empty:
        raise ValueError("trace table: no jobs; expected at least one row")
    jobs: dict[int, Job] = {}
    usable: dict[str, int] = {}
    table = trace[list(TRACE_COLUMNS)]
    columns = _valid_columns(table)
    if columns is not None:  # every number checked at once
        made = (Job(*values) for values in zip(*columns, strict=True))
    else:  # row by row, to name the first bad value
        made = (_job(row, row_number) for row_number, row in enumerate(table.itertuples(index=False)))
    for row_number, job in enumerate(made):
        if job.job_id in jobs:
            raise ValueError(f"trace table: job_id {job.job_id} appears more than once (row {row_number})")
        if job.workload not in usable:
            usable[job.workload] = max((spec.gpus_of(device) for device, _ in spec.devices
                                        if profile.has_solo(device, job.workload)), default=0)
            if not profile.has_solo(profile.reference_device, job.workload):
                raise ValueError(f"trace table: workload {job.workload!r} (job {job.job_id}) has no solo "
                                 f"throughput on the reference device {profile.reference_device}")
        if job.num_gpus > usable[job.workload]:
            raise ValueError(f"trace table: job {job.job_id} needs {job.num_gpus} GPUs but the cluster has "
                             f"at most {usable[job.workload]} that can run {job.workload!r}")
        job.shareable = job.num_gpus == 1 or spec.share_multi_gpu
        jobs[job.job_id] = job
    return jobs


def _valid_columns(table: pd.DataFrame) -> tuple[list, ...] | None:
    """(job ids, submit times, durations, GPU counts, workloads) as Python values, as _job makes them, when
    every number is valid (numeric columns, ids and GPU counts whole, times finite and in range); else None."""
    numbers = [table[c].to_numpy() for c in ("job_id", "submit_time", "duration", "num_gpus")]
    if any(column.dtype.kind not in "iuf" for column in numbers):
        return None
    if any(column.dtype.kind == "u" and len(column) and column.max() > INT64[1] for column in (numbers[0], numbers[3])):
        return None
    ids, submit, duration, gpus = (column.astype(float) for column in numbers)
    whole_ids = ids == np.floor(ids) if numbers[0].dtype.kind in "iu" else (ids == np.floor(ids)) & (
        np.abs(ids) < EXACT_FLOAT_ID)
    with np.errstate(invalid="ignore"):
        valid = (np.isfinite(ids) & whole_ids & (submit >= 0) & (submit <= MAX_TIME_S) & (duration >= MIN_DURATION_S)
                 & (duration <= MAX_TIME_S) & np.isfinite(gpus) & (gpus == np.floor(gpus)) & (gpus >= 1)
                 & (gpus <= EXACT_FLOAT_ID))
    if not valid.all():
        return None
    whole = [column.tolist() if column.dtype.kind in "iu" else column.astype(np.int64).tolist()
             for column in (numbers[0], numbers[3])]
    return (whole[0], submit.tolist(), duration.tolist(), whole[1], [str(w) for w in table["workload"].tolist()])


def _job(row, row_number: int) -> Job:
    job_id = _integer(row.job_id)
    if job_id is None or not INT64[0] <= job_id <= INT64[1]:
        raise ValueError(f"trace table row {row_number}: job_id {row.job_id!r}; expected an integer in int64's "
                         f"range (a float only if whole and below 2**53 in magnitude)")
    checks = (("submit_time", _real(row.submit_time), f"seconds in [0, {MAX_TIME_S:g}]",
               lambda v: 0 <= v <= MAX_TIME_S),
              ("duration", _real(row.duration), f"seconds in [{MIN_DURATION_S:g}, {MAX_TIME_S:g}]",
               lambda v: MIN_DURATION_S <= v <= MAX_TIME_S),
              ("num_gpus", _integer(row.num_gpus), "an integer >= 1", lambda v: 1 <= v <= EXACT_FLOAT_ID))
    for column, value, expected, ok in checks:
        if value is None or not ok(value):
            raise ValueError(f"trace table: job {job_id} (row {row_number}): {column} "
                             f"{getattr(row, column)!r}; expected {expected}")
    return Job(job_id, checks[0][1], checks[1][1], checks[2][1], str(row.workload))


def _real(value) -> float | None:
    """`value` as a finite float; None for booleans, non-numbers, NaN and infinities."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _integer(value) -> int | None:
    """`value` as an int if it is a whole number (3 or 3.0); None otherwise (booleans included)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    real = _real(value)
    return int(real) if real is not None and real.is_integer() and abs(real) < EXACT_FLOAT_ID else None
