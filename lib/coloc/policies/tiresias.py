"""Tiresias: discretized two-dimensional least-attained-service (2D-LAS).

Attained service is GPU-seconds (GPUs x time run). Thresholds split jobs into
priority queues (fewer attained GPU-seconds = higher priority), FIFO by
arrival inside a queue. Each round the highest-priority jobs that fit keep or
get GPUs (exclusive); running jobs that no longer fit are preempted. Rounds
run at every arrival and every `period_s` so that demotions take effect.
Optional starvation guard: a job that has waited `starve_factor` x its run
time is promoted to the top queue (Tiresias's STARVELIMIT).
"""
from __future__ import annotations

import bisect

from coloc.policies.base import Policy, register
from coloc.sim.job import RUNNING


@register("tiresias")
class Tiresias(Policy):
    def __init__(self, thresholds: tuple[float, ...] = (3600.0, 36000.0), period_s: float = 60.0,
                 starve_factor: float | None = None):
        self.thresholds = tuple(sorted(float(t) for t in thresholds))
        self.period_s = period_s
        self.starve_factor = starve_factor

    def priority(self, job, now: float) -> tuple:
        attained = job.attained
        if job.state == RUNNING:
            attained += (now - job.last_update) * job.num_gpus
        level = bisect.bisect_right(self.thresholds, attained)
        if self.starve_factor is not None and job.state != RUNNING:
            if now - job.queued_since >= self.starve_factor * max(job.run_time, 1.0):
                level = 0
        return (level, job.submit_time, job.job_id)

    def schedule(self, sim) -> None:
        now, cluster = sim.now, sim.cluster
        active = sorted(list(sim.running.values()) + list(sim.queue), key=lambda j: self.priority(j, now))
        budget = {d: sim.spec.gpus_of(d) for d in cluster.devices}
        keep, start = set(), []
        for job in active:
            if job.state == RUNNING:
                if budget[job.device] >= job.num_gpus:
                    budget[job.device] -= job.num_gpus
                    keep.add(job.job_id)
                continue
            for device in cluster.devices:
                if budget[device] >= job.num_gpus and sim.truth.has_solo(device, job.workload):
                    budget[device] -= job.num_gpus
                    start.append((job, device))
                    break
        if not start:
            return
        for job in [j for j in sim.running.values() if j.job_id not in keep]:
            sim.preempt(job)
        for job, device in start:
            sim.place(job, cluster.pick_free(device, job.num_gpus))
