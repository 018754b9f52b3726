"""Invariants of a simulation; each raises SimulationError with the job and the numbers."""
from __future__ import annotations

import math
import numbers

from coloc.sim.job import DONE, QUEUED, RUNNING, Job

REL_TOL = 1e-6
MIN_PERIOD_S = 1.0  # the shortest period of a policy's rounds: real schedulers' are seconds to minutes (Gandiva,
                    # Tiresias: 60 s); shorter ones vanish below a float's step at late times and never advance
MAX_TIME_S = 1e12  # the latest time a trace or a period may name (about 31,700 years)


class SimulationError(RuntimeError):
    """A broken invariant or an impossible request; the run cannot be trusted."""


def completed_work(job: Job, now: float) -> None:
    """At completion the job has done exactly its work plus restart overhead."""
    total = job.work + job.overhead
    tol = REL_TOL * total + 1e-9
    if abs(job.remaining) > tol or abs(job.done_work - total) > tol:
        raise SimulationError(f"t={now}: job {job.job_id} completes with {job.remaining:.9g} work left and "
                     f"{job.done_work:.9g} done of {total:.9g} (work conservation broken)")


def state(view) -> None:
    """Cluster indexes agree with residents; every job is in exactly one place (`view`: a SchedulerView)."""
    try:
        view.cluster.check()
    except RuntimeError as err:
        raise SimulationError(f"t={view.now}: {err}") from err
    on_gpus = {j.job_id for here in view.cluster.residents for j in here}
    if on_gpus != set(view.running):
        raise SimulationError(f"t={view.now}: jobs on GPUs {sorted(on_gpus ^ set(view.running))[:5]} "
                     f"disagree with the running set")
    for job in view.running.values():
        if job.state != RUNNING or job in view.queue:
            raise SimulationError(f"t={view.now}: running job {job.job_id} is {job.state} or also queued")
    for job in view.queue:
        if job.state != QUEUED or job.job_id in view.running:
            raise SimulationError(f"t={view.now}: queued job {job.job_id} is {job.state} or also running")


def final(view, jobs) -> None:
    """Every job finished once, the cluster is empty, work and time add up (`jobs`: {id: Job})."""
    state(view)
    if view.queue or view.running or view.cluster.busy:
        raise SimulationError(f"end: {len(view.queue)} queued, {len(view.running)} running, "
                     f"{view.cluster.busy} busy GPUs; expected none")
    done_total = work_total = 0.0
    for job in jobs.values():
        if job.state != DONE or math.isnan(job.finish_time):
            raise SimulationError(f"end: job {job.job_id} never finished (state {job.state})")
        jct = job.finish_time - job.submit_time
        if job.start_time < job.submit_time or jct <= 0:
            raise SimulationError(f"end: job {job.job_id} starts at {job.start_time} / finishes at "
                         f"{job.finish_time} but was submitted at {job.submit_time}")
        if abs(job.queued_time + job.run_time - jct) > REL_TOL * jct + 1e-6:
            raise SimulationError(f"end: job {job.job_id} queued {job.queued_time} + ran {job.run_time} "
                         f"!= jct {jct}")
        if job.colocated_time > job.run_time * (1 + REL_TOL) + 1e-9:
            raise SimulationError(f"end: job {job.job_id} co-located {job.colocated_time} s of {job.run_time} s")
        done_total += job.done_work
        work_total += job.work + job.overhead
    if abs(done_total - work_total) > REL_TOL * work_total + 1e-6:
        raise SimulationError(f"end: work done {done_total} != work submitted + overhead {work_total}")


def period_of(policy) -> float | None:
    """The policy's `period_s` (seconds between its periodic rounds; None or absent: none), refused unless a real
    number in [MIN_PERIOD_S, MAX_TIME_S]: 0, a negative, a subnormal or a NaN period would hang or crash the run."""
    period = getattr(policy, "period_s", None)
    if period is None:
        return None
    name = getattr(policy, "name", type(policy).__name__)
    if isinstance(period, bool) or not isinstance(period, numbers.Real) or not (
            MIN_PERIOD_S <= float(period) <= MAX_TIME_S):
        raise ValueError(f"policy {name!r}: period_s {period!r}; expected None (no periodic rounds) or a number of "
                         f"seconds in [{MIN_PERIOD_S:g}, {MAX_TIME_S:g}]")
    return float(period)
