"""Discrete-event simulator: arrivals, completions and scheduling rounds over a cluster.

A job's work is its exclusive duration on the reference device (reference
seconds). Running on device d with co-runners it progresses at
speed(d) x factor, where factor is its measured normalized throughput with
its co-runners (the minimum over its GPUs for a gang job). Rates are
recomputed whenever a GPU's set of jobs changes. Policies act through
`place`, `preempt` and `migrate`, which check every rule and fail loudly.
"""
from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from coloc.sim.cluster import Cluster, ClusterSpec
from coloc.sim.interference import GroundTruth, require_columns
from coloc.sim.job import DONE, QUEUED, RUNNING, Job
from coloc.sim.predictions import Predictions
from coloc.sim.queue import JobQueue
from coloc.sim import checks

TRACE_COLUMNS = ("job_id", "submit_time", "duration", "num_gpus", "workload")
COMPLETION, ROUND = 0, 1


class SimulationError(RuntimeError):
    """A broken invariant or an impossible request; the run cannot be trusted."""


@dataclass
class SimResult:
    jobs: pd.DataFrame
    timeline: pd.DataFrame
    stats: dict = field(default_factory=dict)


class Simulator:
    """One run of one policy over one trace on one cluster."""

    def __init__(self, trace: pd.DataFrame, truth: GroundTruth, policy, spec: ClusterSpec,
                 predictions: Predictions | None = None, restart_cost_s: float = 0.0,
                 seed: int = 0, check_every: int = 0):
        self.truth = truth
        self.policy = policy
        self.spec = spec
        self.cluster = Cluster(spec)
        self.predictions = predictions
        self.restart_cost_s = float(restart_cost_s)
        self.seed = seed
        self.rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(7,)))
        self.check_every = check_every
        self.jobs = _jobs_from_trace(trace, truth, spec)
        self.arrivals = sorted(self.jobs.values(), key=lambda j: (j.submit_time, j.job_id))
        self.queue = JobQueue(policy.queue_key)
        self.running: dict[int, Job] = {}
        self.now = 0.0
        self._events: list = []
        self._seq = 0
        self._dirty: set[int] = set()
        self._factor_cache: dict = {}
        self._share_cache: dict = {}
        self.effective = 0.0          # sum over running jobs of num_gpus x factor
        self.stats = {"events": 0, "rounds": 0, "decision_time_s": 0.0, "preemptions": 0,
                      "migrations": 0, "placements": 0}

    # ----- actions for policies -------------------------------------------------
    def can_share(self, device: str, workloads) -> bool:
        """Whether these workloads fit on one GPU together (memory; known to every policy)."""
        key = (device, tuple(sorted(workloads)))
        value = self._share_cache.get(key)
        if value is None:
            value = self._share_cache[key] = self.truth.feasible(device, key[1])
        return value

    def place(self, job: Job, gpus) -> None:
        """Start (or restart) a queued job on `gpus`."""
        gpus = tuple(int(g) for g in gpus)
        if job.state != QUEUED or job not in self.queue:
            raise SimulationError(f"t={self.now}: job {job.job_id} placed while {job.state}")
        if not gpus or min(gpus) < 0 or max(gpus) >= self.cluster.num_gpus:
            raise SimulationError(f"t={self.now}: job {job.job_id} placed on invalid GPUs {gpus}")
        device = self.cluster.gpu_device[gpus[0]]
        if not self.truth.has_solo(device, job.workload):
            raise SimulationError(f"t={self.now}: job {job.job_id} ({job.workload}) has no solo "
                                  f"throughput on {device}")
        for gpu in gpus:
            others = [j.workload for j in self.cluster.residents[gpu]]
            if others and not self.truth.feasible(device, others + [job.workload]):
                raise SimulationError(f"t={self.now}: job {job.job_id} ({job.workload}) on GPU {gpu} "
                                      f"with {others}: infeasible on {device}")
        self.cluster.add(job, gpus)
        self.queue.remove(job)
        job.state, job.gpus, job.device = RUNNING, gpus, device
        job.speed = self.truth.speed(device, job.workload)
        job.queued_time += self.now - job.queued_since
        job.last_update = self.now
        job.placed_at = self.now
        if math.isnan(job.start_time):
            job.start_time = self.now
        if job.restart_due:
            extra = self.restart_cost_s * job.speed
            job.overhead += extra
            job.remaining += extra
            job.restart_due = False
        self.running[job.job_id] = job
        self._dirty.update(gpus)
        self.stats["placements"] += 1

    def preempt(self, job: Job) -> None:
        """Stop a running job and put it back in the queue (it pays the restart cost later)."""
        if job.state != RUNNING:
            raise SimulationError(f"t={self.now}: job {job.job_id} preempted while {job.state}")
        self._stop(job)
        job.state = QUEUED
        job.queued_since = self.now
        job.restart_due = self.restart_cost_s > 0
        job.preemptions += 1
        self.stats["preemptions"] += 1
        self.queue.push(job)

    def migrate(self, job: Job, gpus) -> None:
        """Move a running job to other GPUs (a preemption and an immediate restart)."""
        self.preempt(job)
        job.preemptions -= 1
        job.migrations += 1
        self.stats["preemptions"] -= 1
        self.stats["migrations"] += 1
        self.place(job, gpus)

    def observed_factor(self, job: Job) -> float:
        """The co-location factor the job is achieving now (what a running system can measure)."""
        return job.factor

    # ----- internals --------------------------------------------------------------
    def _stop(self, job: Job) -> None:
        self._settle(job)
        self.cluster.remove(job)
        self._dirty.update(job.gpus)
        self.effective -= job.num_gpus * job.factor
        job.rate = job.factor = 0.0
        job.colocated = False
        job.version += 1
        del self.running[job.job_id]

    def _settle(self, job: Job) -> None:
        dt = self.now - job.last_update
        if dt > 0:
            progress = job.rate * dt
            job.remaining -= progress
            job.done_work += progress
            job.run_time += dt
            job.attained += dt * job.num_gpus
            if job.colocated:
                job.colocated_time += dt
        job.last_update = self.now

    def _factor(self, job: Job) -> tuple[float, bool]:
        factor, shared = 1.0, False
        for gpu in job.gpus:
            others = tuple(sorted(j.workload for j in self.cluster.residents[gpu] if j is not job))
            if not others:
                continue
            shared = True
            key = (job.device, job.workload, others)
            value = self._factor_cache.get(key)
            if value is None:
                value = self._factor_cache[key] = self.truth.norm(job.device, job.workload, others)
            factor = min(factor, value)
        return factor, shared

    def _refresh_rates(self) -> None:
        residents = self.cluster.residents
        affected = {j.job_id: j for gpu in self._dirty for j in residents[gpu]}
        self._dirty.clear()
        for job_id in sorted(affected):
            job = affected[job_id]
            factor, shared = self._factor(job)
            if factor == job.factor and shared == job.colocated:
                continue
            self._settle(job)
            self.effective += job.num_gpus * (factor - job.factor)
            job.factor, job.colocated = factor, shared
            job.rate = job.speed * factor
            job.version += 1
            self._push(self.now + max(job.remaining, 0.0) / job.rate, COMPLETION, job, job.version)

    def _push(self, when: float, kind: int, job: Job | None, version: int) -> None:
        self._seq += 1
        heapq.heappush(self._events, (when, self._seq, kind, job, version))

    def _finish(self, job: Job) -> None:
        self._settle(job)
        checks.completed_work(job, self.now)
        job.remaining = 0.0
        self._stop(job)
        job.state = DONE
        job.finish_time = self.now

    # ----- the loop ---------------------------------------------------------------
    def run(self) -> SimResult:
        wall = time.perf_counter()
        if hasattr(self.policy, "reset"):
            self.policy.reset(self)
        timeline: list[tuple[float, int, float]] = []
        events, arrivals = self._events, self.arrivals
        next_arrival, round_pending = 0, False
        period = getattr(self.policy, "period_s", None)
        while events or next_arrival < len(arrivals):
            t_event = events[0][0] if events else math.inf
            t_arrival = arrivals[next_arrival].submit_time if next_arrival < len(arrivals) else math.inf
            self.now = now = min(t_event, t_arrival)
            round_event = False
            while events and events[0][0] == now:
                _, _, kind, job, version = heapq.heappop(events)
                self.stats["events"] += 1
                if kind == ROUND:
                    round_event, round_pending = True, False
                elif job.version == version and job.state == RUNNING:
                    self._finish(job)
            while next_arrival < len(arrivals) and arrivals[next_arrival].submit_time == now:
                job = arrivals[next_arrival]
                next_arrival += 1
                job.state, job.queued_since = QUEUED, now
                self.queue.push(job)
                self.stats["events"] += 1
            if self.queue or round_event:
                self._round()
            self._refresh_rates()
            if not timeline or timeline[-1][1:] != (self.cluster.busy, self.effective):
                timeline.append((now, self.cluster.busy, self.effective))
            if self.queue and not self.running and next_arrival == len(arrivals):
                raise SimulationError(f"t={now}: policy {self.policy.name} leaves {len(self.queue)} jobs "
                                      f"queued on an idle cluster with no arrivals left, e.g. "
                                      f"{[j.job_id for j in list(self.queue)[:5]]}")
            if period and not round_pending and (self.queue or self.running):
                self._push(now + period, ROUND, None, 0)
                round_pending = True
        checks.final(self)
        self.stats["wall_s"] = time.perf_counter() - wall
        return SimResult(self._jobs_frame(), pd.DataFrame(timeline, columns=["time", "busy_gpus", "effective_gpus"]),
                         dict(self.stats))

    def _round(self) -> None:
        start = time.perf_counter()
        self.policy.schedule(self)
        self.stats["decision_time_s"] += time.perf_counter() - start
        self.stats["rounds"] += 1
        if self.check_every and self.stats["rounds"] % self.check_every == 0:
            checks.state(self)

    def _jobs_frame(self) -> pd.DataFrame:
        rows = [(j.job_id, self.policy.name, j.submit_time, j.start_time, j.finish_time,
                 j.finish_time - j.submit_time, j.queued_time, j.num_gpus, j.workload,
                 j.colocated_time, (j.finish_time - j.submit_time) / j.duration, j.duration,
                 j.device, j.run_time, j.preemptions, j.migrations)
                for j in sorted(self.jobs.values(), key=lambda j: j.job_id)]
        return pd.DataFrame(rows, columns=["job_id", "policy", "submit_time", "start_time", "finish_time",
                                           "jct", "queue_delay", "num_gpus", "workload", "colocated_time",
                                           "slowdown", "duration", "device", "run_time", "preemptions",
                                           "migrations"])


def _jobs_from_trace(trace: pd.DataFrame, truth: GroundTruth, spec: ClusterSpec) -> dict[int, Job]:
    require_columns(trace, TRACE_COLUMNS, "trace table")
    if trace["job_id"].duplicated().any():
        dup = trace.loc[trace["job_id"].duplicated(), "job_id"].iloc[0]
        raise ValueError(f"trace table: job_id {dup} appears more than once")
    jobs: dict[int, Job] = {}
    usable: dict[str, int] = {}
    for row in trace[list(TRACE_COLUMNS)].itertuples(index=False):
        job = Job(int(row.job_id), float(row.submit_time), float(row.duration), int(row.num_gpus), str(row.workload))
        if not (job.duration > 0 and job.submit_time >= 0 and job.num_gpus >= 1):
            raise ValueError(f"trace table: job {job.job_id} has submit_time={job.submit_time}, "
                             f"duration={job.duration}, num_gpus={job.num_gpus}; expected >=0, >0, >=1")
        if job.workload not in usable:
            usable[job.workload] = max((spec.gpus_of(device) for device, _ in spec.devices
                                        if truth.has_solo(device, job.workload)), default=0)
            if not truth.has_solo(truth.reference_device, job.workload):
                raise ValueError(f"trace table: workload {job.workload!r} (job {job.job_id}) has no solo "
                                 f"throughput on the reference device {truth.reference_device}")
        if job.num_gpus > usable[job.workload]:
            raise ValueError(f"trace table: job {job.job_id} needs {job.num_gpus} GPUs but the cluster has "
                             f"at most {usable[job.workload]} that can run {job.workload!r}")
        job.shareable = job.num_gpus == 1 or spec.share_multi_gpu
        jobs[job.job_id] = job
    return jobs


def simulate(trace: pd.DataFrame, truth: GroundTruth, policy, spec: ClusterSpec,
             predictions: Predictions | None = None, restart_cost_s: float = 0.0, seed: int = 0,
             check_every: int = 0) -> SimResult:
    """Run `policy` over `trace`; see Simulator."""
    return Simulator(trace, truth, policy, spec, predictions, restart_cost_s, seed, check_every).run()
