"""Scheduling delay (ISACPP Fig. 16): wall time of one scheduling round against the number of queued jobs.

The state a round starts from, for one seed: a cluster (``ClusterSpec.parse`` text) whose GPUs are
`busy_share` occupied by running jobs, each alone on its GPUs and part-way through its work, and
`queued_jobs` jobs waiting. Jobs (residents and queue) are drawn like the Poisson trace
(coloc.sim.traces.poisson: log-normal exclusive durations, GPU counts from `gpu_mix`, job types
uniform among those with a solo throughput on the reference device). Residents are placed through
the SchedulerView at staggered past times (each on a random device type that runs it and has room),
so every policy sees running jobs with elapsed time, remaining work and attained service, and a
queue in submission order. Each policy gets its own copy of that state (its own queue order),
`reset` once (not timed: the Simulator calls it once per run), then one `schedule` call is timed:
what the Simulator counts as one round's decision time. The round places what the policy decides.
A seed's number is the least of a few such rounds, each from a fresh copy of the same state.

What is and is not in the time: the policy's own search over the queue and the cluster, with
predictions looked up from the out-of-fold tables (computed offline by the predictors stage). The
predictor's inference is not in it; in ISACPP's measurement the E-GGAT inference per candidate is.
"""
from __future__ import annotations

import gc
import time
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from coloc import policies
from coloc.datasets import family_of
from coloc.sim import traces
from coloc.sim.cluster import ClusterSpec
from coloc.sim.interference import GroundTruth
from coloc.sim.job import QUEUED, Job
from coloc.sim.predictions import Predictions
from coloc.sim.view import Profile, SchedulerView
from coloc.studies import experiment

COLUMNS = ["policy", "kind", "queued_jobs", "cluster", "gpus", "seed", "decision_s", "placed", "busy_gpus"]
PAPER_AT_100 = {"isacpp": 35.4, "horus": 15.3, "fifo": 9.3}  # ISACPP Fig. 16, s at 100 queued (fifo: Volcano)
PAPER_NAMES = {"isacpp": "ISACPP", "horus": "Horus", "fifo": "Volcano"}


def draw_jobs(n: int, workloads: Sequence[str], seed: int, spec: ClusterSpec, profile: Profile,
              median_duration_s: float, duration_sigma: float, gpu_mix: Mapping[int, float] | None,
              first_id: int = 0) -> list[Job]:
    """`n` jobs drawn as the Poisson trace draws them (arrival times are not used), ids from `first_id`."""
    table = traces.poisson(n, workloads, seed, 1.0, spec.total_gpus, median_duration_s, duration_sigma, gpu_mix)
    table = table.assign(job_id=table["job_id"] + first_id, submit_time=0.0)
    return list(traces.jobs_from_trace(table, profile, spec).values())


def round_state(policy, profile: Profile, spec: ClusterSpec, predictions: Predictions | None,
                queued: Sequence[Job], residents: Sequence[Job], busy_share: float, seed: int) -> SchedulerView:
    """The view a round of `policy` starts from: residents running on `busy_share` of the GPUs, `queued` waiting.

    Works on copies of the given jobs (one draw serves every policy and repeat). `residents` are
    candidates, placed in order while GPUs stay below the busy share (a candidate that fits nowhere
    is passed over). The same seed gives the same state for every policy.
    """
    if not 0.0 <= busy_share < 1.0:
        raise ValueError(f"scheduling delay: busy_share {busy_share}; expected a share in [0, 1)")
    view = SchedulerView.for_policy(policy, spec, profile, predictions)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2]))
    placed = _place_residents(view, [_fresh(job) for job in residents], busy_share, rng)
    start = -min((when for when, _ in placed), default=0.0)  # the round's time: after every resident started
    for when, job in placed:
        _run_alone(view, job, start + when)
    view.now = start
    for template in queued:
        job = _fresh(template)
        job.state, job.submit_time, job.queued_since, job.last_update = QUEUED, start, start, start
        view.queue.push(job)
    view.dirty.clear()
    return view


def _fresh(job: Job) -> Job:
    """A new, not yet queued job like `job` (same id, type, size, duration and sharing rule)."""
    new = Job(job.job_id, job.submit_time, job.duration, job.num_gpus, job.workload)
    new.shareable = job.shareable
    return new


def _place_residents(view: SchedulerView, jobs: list[Job], busy_share: float,
                     rng: np.random.Generator) -> list[tuple[float, Job]]:
    """Put residents on idle GPUs (random device type among those that run them and have room).

    Returns (start time relative to the round, <= 0, job): each has run a uniform share of its
    exclusive time on its device.
    """
    cluster, target = view.cluster, busy_share * view.cluster.num_gpus
    placed = []
    for job in jobs:
        if cluster.busy + job.num_gpus > target:
            continue
        devices = [d for d in cluster.devices
                   if cluster.free_count[d] >= job.num_gpus and view.has_solo(d, job.workload)]
        if not devices:
            continue
        device = devices[int(rng.integers(len(devices)))]
        job.state = QUEUED
        view.queue.push(job)
        view.place(job, cluster.pick_free(device, job.num_gpus))
        elapsed = float(rng.uniform(0.0, 1.0)) * job.work / job.speed
        placed.append((-elapsed, job))
    return sorted(placed, key=lambda item: (item[0], item[1].job_id))


def _run_alone(view: SchedulerView, job: Job, started: float) -> None:
    """Back-date a resident's start to `started`, running alone (normalized throughput 1, as measured
    alone: no ground truth is needed) from then on; the view settles its progress when it changes."""
    job.start_time = job.placed_at = job.last_update = job.submit_time = job.queued_since = started
    job.factor, job.colocated = 1.0, False
    job.rate = job.speed
    view.effective += job.num_gpus


def time_round(policy, view: SchedulerView) -> tuple[float, int]:
    """(seconds inside one `schedule` call, jobs it placed); `reset` runs first, untimed."""
    policy.reset(view)
    before = view.stats["placements"]
    collecting = gc.isenabled()
    gc.disable()  # as timeit does: a collection triggered by earlier garbage is not the policy's time
    try:
        start = time.perf_counter()
        policy.schedule(view)
        seconds = time.perf_counter() - start
    finally:
        if collecting:
            gc.enable()
    return seconds, view.stats["placements"] - before


def job_types(truth: GroundTruth, families: Sequence[str] = ()) -> list[str]:
    """Job types with a solo throughput on the reference device, of `families` if given (else all)."""
    workloads = truth.workloads(truth.reference_device)
    if not families:
        return workloads
    kept = [w for w in workloads if family_of(w) in set(families)]
    if not kept:
        raise ValueError(f"scheduling delay: no job type of families {list(families)}; have "
                         f"{sorted({family_of(w) for w in workloads})}")
    return kept


def check_policies(names: Sequence[str]) -> None:
    """Refuse, naming it, a policy that is not a plain registered name."""
    for name in names:
        _policy_class_checked(name)


def make_policy(name: str, truth: GroundTruth):
    """A fresh registered policy (a plain name, checked), made as a simulation run makes it
    (coloc.studies.experiment.make_policy: only the oracle is given the truth)."""
    _policy_class_checked(name)
    return experiment.make_policy(name, truth)


def _policy_class_checked(name: str) -> dict:
    """policies.info of a plain registered name (an unknown name is refused, naming the known ones)."""
    if "~" in name:
        raise ValueError(f"scheduling delay: policy {name!r}; expected a registered policy name without "
                         f"'~<predictor>' (the predictor's values do not change how long a round searches)")
    return policies.info(name)


def measure(truth: GroundTruth, predictions: Predictions | None, policy_names: Sequence[str],
            queued_jobs: Sequence[int], clusters: Sequence[str], seeds: Sequence[int], gpus_per_node: int = 4,
            max_jobs_per_gpu: int = 2, busy_share: float = 0.5, median_duration_s: float = 1800.0,
            duration_sigma: float = 1.0, gpu_mix: Mapping[int, float] | None = None,
            families: Sequence[str] = (), repeats: int = 3, progress=None) -> pd.DataFrame:
    """One row per (cluster, queue length, seed, policy): the wall time of one round (table COLUMNS).

    `decision_s` is the least of `repeats` rounds, each from a fresh copy of the seed's state (as
    timeit advises: other processes only ever add time); `placed` is what the round placed.

    Job types: those with a solo throughput on the reference device, of `families` if given (e.g. the
    families a small predictor run covers). Everything is checked before the first measurement: policy
    names, queue lengths (>= 1), cluster texts, and that `predictions` cover every device type and job
    type a predictive policy may use.
    `progress`: an optional wrapper of the iteration (e.g. tqdm).
    """
    specs = [ClusterSpec.parse(text, gpus_per_node=gpus_per_node, max_jobs_per_gpu=max_jobs_per_gpu)
             for text in clusters]
    bad = [n for n in queued_jobs if int(n) != n or n < 1]
    if bad or not queued_jobs:
        raise ValueError(f"scheduling delay: queued_jobs {list(queued_jobs)}; expected integers >= 1")
    if repeats < 1:
        raise ValueError(f"scheduling delay: repeats {repeats}; expected an integer >= 1")
    check_policies(policy_names)
    workloads = job_types(truth, families)
    _check_predictions(truth, predictions, policy_names, specs, workloads)
    profile = Profile.of(truth)
    cases = [(text, spec, n, seed) for text, spec in zip(clusters, specs, strict=True) for n in queued_jobs for seed in seeds]
    rows = []
    for text, spec, n, seed in (progress(cases) if progress else cases):
        draw = (spec, profile, median_duration_s, duration_sigma, gpu_mix)
        queued = draw_jobs(int(n), workloads, seed, *draw)
        residents = draw_jobs(spec.total_gpus, workloads, seed + 1_000_003, *draw, first_id=int(n))
        for name in policy_names:
            times = []
            for _ in range(repeats):
                policy = make_policy(name, truth)
                view = round_state(policy, profile, spec, predictions, queued, residents, busy_share, seed)
                busy = view.cluster.busy
                seconds, placed = time_round(policy, view)
                times.append(seconds)
            rows.append((name, policy.kind, int(n), text, spec.total_gpus, int(seed), min(times), placed, busy))
    return pd.DataFrame(rows, columns=COLUMNS)


def _check_predictions(truth: GroundTruth, predictions: Predictions | None, policy_names, specs, workloads) -> None:
    needs = {n for name in policy_names for n in policies.prediction_needs(name)}
    if not needs:
        return
    if predictions is None:
        raise ValueError(f"scheduling delay: policies {list(policy_names)} read predictions ({sorted(needs)}); "
                         f"none were given")
    for device in sorted({d for spec in specs for d, _ in spec.devices}):
        if device not in truth.devices:
            raise ValueError(f"scheduling delay: cluster device {device!r} has no measurements; have {truth.devices}")
        runs = [w for w in workloads if truth.has_solo(device, w)]
        if "norm" in needs:
            predictions.require_pairs(truth, device, runs)
        if "util" in needs and predictions.has_util():
            for w in runs:
                predictions.util(device, w)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean, min and max seconds per (cluster, policy, queue length) over seeds, with mean jobs placed."""
    keys = ["cluster", "gpus", "policy", "kind", "queued_jobs"]
    grouped = table.groupby(keys, sort=False)
    out = grouped["decision_s"].agg(["mean", "min", "max"]).add_prefix("decision_s_")
    return out.join(grouped["placed"].mean().rename("placed_mean")).reset_index()
