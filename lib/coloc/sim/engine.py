"""Discrete-event simulator: arrivals, completions and scheduling rounds over a cluster.

A job's work is its exclusive duration on the reference device (reference
seconds). Running on device d with co-runners it progresses at
speed(d) x factor, where factor is its measured normalized throughput with
its co-runners (the minimum over its GPUs for a gang job). Rates are
recomputed whenever a GPU's set of jobs changes. Policies see a
SchedulerView (coloc.sim.view) and act through its `place`, `preempt` and
`migrate`, which check every rule and fail loudly; the measured co-location
numbers (`truth`) stay here.

The timeline holds, at each change, the busy GPUs, the effective GPUs (sum of
GPUs x normalized throughput) and, where the truth has measured utilization
(Lucid's nvidia-smi values), `measured_util_gpus`: the sum over GPUs of what
nvidia-smi would show (0 idle, a lone job's solo utilization, a pair's
measured utilization; NaN while any GPU holds a set never measured). Without
measured utilization (Gavel's data) the column is NaN throughout.
"""
from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np
import pandas as pd

from coloc.sim import checks
from coloc.sim.checks import SimulationError
from coloc.sim.cluster import ClusterSpec
from coloc.sim.interference import GroundTruth
from coloc.sim.job import DONE, QUEUED, RUNNING, Job
from coloc.sim.predictions import Predictions
from coloc.sim.traces import jobs_from_trace
from coloc.sim.view import Profile, SchedulerView

COMPLETION, ROUND = 0, 1

__all__ = ["SimResult", "SimulationError", "Simulator", "simulate"]


@dataclass
class SimResult:
    jobs: pd.DataFrame
    timeline: pd.DataFrame
    stats: dict = field(default_factory=dict)


class Simulator:
    """One run of one policy over one trace on one cluster; the policy acts on `view`.

    `seed` labels the run (the trace already holds the seed's draws; nothing here is random).
    """

    def __init__(self, trace: pd.DataFrame, truth: GroundTruth, policy, spec: ClusterSpec,
                 predictions: Predictions | None = None, restart_cost_s: float = 0.0,
                 seed: int = 0, check_every: int = 0):
        self.truth = truth
        self.policy = policy
        self.seed = seed
        self.check_every = check_every
        truth.require_devices([device for device, _ in spec.devices], f"cluster {spec.devices}")
        self.period = checks.period_of(policy)
        profile = Profile.of(truth)
        self.jobs = jobs_from_trace(trace, profile, spec)
        self.arrivals = sorted(self.jobs.values(), key=attrgetter("submit_time", "job_id"))
        self.view = SchedulerView.for_policy(policy, spec, profile, predictions, restart_cost_s)
        self._events: list = []
        self._seq = 0
        self._factor_cache: dict = {}
        self._measures_util = truth.measures_util
        self._gpu_util = [0.0] * spec.total_gpus  # measured utilization of each GPU (a share; NaN: not measured)
        self._util_sum, self._util_unknown = 0.0, 0  # their sum over the GPUs with a value; GPUs without one

    # ----- co-location rates (the measured truth) ------------------------------------
    def _factor(self, job: Job) -> tuple[float, bool]:
        """(the job's measured factor with its co-runners, whether it shares a GPU); marks job.crowded where a GPU
        of it holds 3 or more jobs (the truth there is the product of pairs). The factor is the least over the
        job's GPUs (1 on a GPU it has alone), a measured value above 1 kept as measured (Lucid's noise around 1:
        a pair that does not slow the job)."""
        factor, shared = math.inf, False
        residents = self.view.cluster.residents
        for gpu in job.gpus:
            here = residents[gpu]
            if len(here) == 1:
                if factor > 1.0:
                    factor = 1.0
                continue
            shared = True
            if len(here) == 2:
                others = ((here[1] if here[0] is job else here[0]).workload,)
            else:
                job.crowded = True
                others = tuple(sorted(j.workload for j in here if j is not job))
            key = (job.device, job.workload, others)
            value = self._factor_cache.get(key)
            if value is None:
                value = self._factor_cache[key] = self.truth.norm(job.device, job.workload, others)
            if value < factor:
                factor = value
        return factor, shared

    def _refresh_rates(self) -> None:
        view = self.view
        dirty = view.dirty
        if not dirty:
            return
        residents = view.cluster.residents
        affected = {}
        for gpu in dirty:
            for job in residents[gpu]:
                affected[job.job_id] = job
        if self._measures_util:
            self._update_util(dirty)
        dirty.clear()
        if view.changed_jobs is not None:
            view.changed_jobs.update(affected)
        now, events = view.now, self._events
        for job_id in sorted(affected) if len(affected) > 1 else affected:
            job = affected[job_id]
            was_crowded = job.crowded
            if len(job.gpus) == 1 and len(residents[job.gpus[0]]) == 1:
                factor, shared = 1.0, False  # alone on its GPU
                job.crowded = False
            else:
                job.crowded = False
                factor, shared = self._factor(job)
            if factor == job.factor and shared == job.colocated and was_crowded == job.crowded:
                continue
            crowded, job.crowded = job.crowded, was_crowded  # (the time until now is settled as it was)
            view._settle(job)
            job.crowded = crowded
            view.effective += job.num_gpus * (factor - job.factor)
            job.factor, job.colocated = factor, shared
            job.rate = job.speed * factor
            job.version += 1
            self._seq += 1
            heapq.heappush(events, (now + max(job.remaining, 0.0) / job.rate, self._seq, COMPLETION, job, job.version))

    def _update_util(self, gpus) -> None:
        """Set the measured utilization of `gpus` (their resident sets changed) and the cluster's sum."""
        cluster = self.view.cluster
        for gpu in gpus:
            value = self.truth.gpu_util(cluster.gpu_device[gpu], [job.workload for job in cluster.residents[gpu]])
            old = self._gpu_util[gpu]
            if math.isnan(old):
                self._util_unknown -= 1
            else:
                self._util_sum -= old
            if math.isnan(value):
                self._util_unknown += 1
            else:
                self._util_sum += value
            self._gpu_util[gpu] = value
        if not any(self._gpu_util):  # all idle: no rounding left over
            self._util_sum = 0.0

    def measured_util_gpus(self) -> float:
        """The sum over GPUs of their measured utilization now; NaN without measured utilization or while a GPU
        holds a set never measured."""
        if not self._measures_util or self._util_unknown:
            return math.nan
        return self._util_sum

    def _push(self, when: float, kind: int, job: Job | None, version: int) -> None:
        self._seq += 1
        heapq.heappush(self._events, (when, self._seq, kind, job, version))

    def _finish(self, job: Job) -> None:
        view = self.view
        view._settle(job)
        checks.completed_work(job, view.now)
        job.remaining = 0.0
        view._stop(job)
        job.state = DONE
        job.finish_time = view.now

    # ----- the loop ---------------------------------------------------------------
    def run(self) -> SimResult:
        wall = time.perf_counter()
        view = self.view
        if hasattr(self.policy, "reset"):
            self.policy.reset(view)
        timeline: list[tuple[float, int, float, float]] = []
        events, arrivals, queue, running, cluster = self._events, self.arrivals, view.queue, view.running, view.cluster
        arrival_times = [job.submit_time for job in arrivals] + [math.inf]  # the last: none left
        last_arrival = len(arrivals)
        next_arrival, round_pending, n_events = 0, False, 0
        heappop, refresh_rates = heapq.heappop, self._refresh_rates
        period = self.period
        util_state = (0.0, 0)
        while events or next_arrival < last_arrival:
            now = arrival_times[next_arrival]
            if events and events[0][0] < now:
                now = events[0][0]
            view.now = now
            round_event = False
            while events and events[0][0] == now:
                _, _, kind, job, version = heappop(events)
                n_events += 1
                if kind == ROUND:
                    round_event, round_pending = True, False
                elif job.version == version and job.state == RUNNING:
                    self._finish(job)
            while arrival_times[next_arrival] == now:
                job = arrivals[next_arrival]
                next_arrival += 1
                job.state, job.queued_since = QUEUED, now
                queue.push(job)
                n_events += 1
            if round_event or queue:
                self._round()
            if view.dirty:
                refresh_rates()
            if (not timeline or timeline[-1][1] != cluster.busy or timeline[-1][2] != view.effective
                    or (self._measures_util and util_state != (self._util_sum, self._util_unknown))):
                timeline.append((now, cluster.busy, view.effective, self.measured_util_gpus()))
                util_state = (self._util_sum, self._util_unknown)
            if next_arrival == last_arrival and not running and queue:
                raise SimulationError(f"t={now}: policy {self.policy.name} leaves {len(queue)} jobs "
                                      f"queued on an idle cluster with no arrivals left, e.g. "
                                      f"{[j.job_id for j in list(queue)[:5]]}")
            if period and not round_pending and (queue or running):
                self._push(now + period, ROUND, None, 0)
                round_pending = True
        view.stats["events"] += n_events
        checks.final(view, self.jobs)
        view.stats["wall_s"] = time.perf_counter() - wall
        columns = ["time", "busy_gpus", "effective_gpus", "measured_util_gpus"]
        return SimResult(self._jobs_frame(), pd.DataFrame(timeline, columns=columns), dict(view.stats))

    def _round(self) -> None:
        view = self.view
        decide(self.policy, view)
        if self.check_every and view.stats["rounds"] % self.check_every == 0:
            checks.state(view)

    def _jobs_frame(self) -> pd.DataFrame:
        """One row per job, by job id: its times, where it ran and how it was treated (built a column at a time)."""
        jobs = sorted(self.jobs.values(), key=attrgetter("job_id"))

        def column(name: str, dtype=float):
            return np.fromiter(map(attrgetter(name), jobs), dtype, len(jobs)) if dtype else list(
                map(attrgetter(name), jobs))

        submit, finish, duration = column("submit_time"), column("finish_time"), column("duration")
        return pd.DataFrame({
            "job_id": column("job_id", np.int64), "policy": [self.policy.name] * len(jobs), "submit_time": submit,
            "start_time": column("start_time"), "finish_time": finish, "jct": finish - submit,
            "queue_delay": column("queued_time"), "num_gpus": column("num_gpus", np.int64),
            "workload": column("workload", None), "colocated_time": column("colocated_time"),
            "slowdown": (finish - submit) / duration, "duration": duration, "device": column("device", None),
            "run_time": column("run_time"), "preemptions": column("preemptions", np.int64),
            "migrations": column("migrations", np.int64), "crowded_time": column("crowded_time")})


def simulate(trace: pd.DataFrame, truth: GroundTruth, policy, spec: ClusterSpec,
             predictions: Predictions | None = None, restart_cost_s: float = 0.0, seed: int = 0,
             check_every: int = 0) -> SimResult:
    """Run `policy` over `trace`; see Simulator."""
    return Simulator(trace, truth, policy, spec, predictions, restart_cost_s, seed, check_every).run()


def decide(policy, view) -> None:
    """One decision round of `policy` on `view`, its wall time added to the view's `decision_time_s` and counted in
    its `rounds` (the simulator's and the real testbed's rounds alike)."""
    start = time.perf_counter()
    policy.schedule(view)
    view.stats["decision_time_s"] += time.perf_counter() - start
    view.stats["rounds"] += 1
