"""Tiresias: discretized two-dimensional least-attained-service (2D-LAS).

Attained service is GPU-seconds (GPUs x time run). Thresholds split jobs into
priority queues (fewer attained GPU-seconds = higher priority), FIFO by
arrival inside a queue. Each round the highest-priority jobs that fit keep or
get GPUs (exclusive); running jobs that no longer fit are preempted. Rounds
run at every arrival and every `period_s` so that demotions take effect.
Optional starvation guard: a job that has waited `starve_factor` x its run
time is promoted to the top queue (Tiresias's STARVELIMIT).

Kept incrementally, so that a round costs about the running jobs, not the
queue: a waiting job's attained service does not change, so the queue holds
waiting jobs in priority order (its key; a starving job is re-keyed when it is
promoted). Running jobs' order changes only when one crosses a threshold, so
it is kept until the running set changes or the next crossing. A round walks
the running jobs merged with the queue, passing over waiting jobs too wide for
the GPUs left; a round in which nothing changed since one that started nothing
is skipped.
"""
from __future__ import annotations

import bisect
import heapq

from coloc.sim.job import QUEUED, RUNNING
from reference_sim.base import Policy, register


@register("tiresias")
class Tiresias(Policy):
    def __init__(self, thresholds: tuple[float, ...] = (3600.0, 36000.0), period_s: float = 60.0,
                 starve_factor: float | None = None):
        self.thresholds = tuple(sorted(float(t) for t in thresholds))
        self.period_s = period_s
        self.starve_factor = starve_factor

    def reset(self, view) -> None:
        super().reset(view)
        self._starving: list = []   # heap of (time it starves, seq, job, queued_since) of waiting jobs
        self._promoted: set[tuple[int, float]] = set()  # (job_id, queued_since) promoted in that wait
        self._seq = 0
        self._running: tuple | None = None  # (cluster version, valid until, [(priority, job)] sorted)
        self._idle: tuple | None = None     # (queue version, cluster version, valid until) of a round that started nothing

    def priority(self, job, now: float) -> tuple:
        attained = job.attained
        if job.state == RUNNING:
            attained += (now - job.last_update) * job.num_gpus
        level = bisect.bisect_right(self.thresholds, attained)
        if self.starve_factor is not None and job.state != RUNNING:
            if now - job.queued_since >= self.starve_factor * max(job.run_time, 1.0):
                level = 0
        return (level, job.submit_time, job.job_id)

    def queue_key(self, job) -> tuple:
        """priority() of a waiting job, fixed while it waits (it attains nothing); notes when it starves."""
        level = bisect.bisect_right(self.thresholds, job.attained)
        if self.starve_factor is not None:
            if (job.job_id, job.queued_since) in self._promoted:
                level = 0
            else:
                self._seq += 1
                due = job.queued_since + self.starve_factor * max(job.run_time, 1.0)
                heapq.heappush(self._starving, (due, self._seq, job, job.queued_since))
        return (level, job.submit_time, job.job_id)

    def schedule(self, view) -> None:
        now, queue, cluster = view.now, view.queue, view.cluster
        if self.starve_factor is not None:
            self._promote(view)
        if not queue:
            return
        if self._idle is not None and self._idle[:2] == (queue.version, cluster.version) and now < self._idle[2]:
            return
        running, until = self._running_order(view)
        start, keep = self._walk(view, running)
        if not start:
            self._idle = (queue.version, cluster.version, until)
            return
        for job in [j for j in view.running.values() if j.job_id not in keep]:
            view.preempt(job)
        for job, device in start:
            view.place(job, cluster.pick_free(device, job.num_gpus))

    def _walk(self, view, running):
        """Jobs in priority order (running merged with waiting): who keeps or gets GPUs."""
        queue, devices = view.queue, view.cluster.devices
        budget = {d: view.spec.gpus_of(d) for d in devices}
        keep, start = set(), []
        after, r = None, 0
        while True:
            room = max(budget.values())
            waiting = queue.next_after(after, room) if room > 0 else None
            if waiting is None and not start:
                break  # nothing more can start: every running job keeps its GPUs
            if r < len(running) and (waiting is None or running[r][0] < queue.entry(waiting)[:-1]):
                job = running[r][1]
                r += 1
                if budget[job.device] >= job.num_gpus:
                    budget[job.device] -= job.num_gpus
                    keep.add(job.job_id)
                continue
            if waiting is None:
                break
            after = queue.entry(waiting)
            for device in devices:
                if budget[device] >= waiting.num_gpus and view.has_solo(device, waiting.workload):
                    budget[device] -= waiting.num_gpus
                    start.append((waiting, device))
                    break
        return start, keep

    def _running_order(self, view):
        """Running jobs sorted by priority, and the time until which that order holds (next threshold crossing)."""
        now, version = view.now, view.cluster.version
        if self._running is not None and self._running[0] == version and now < self._running[1]:
            return self._running[2], self._running[1]
        until = float("inf")
        for job in view.running.values():
            attained = job.attained + (now - job.last_update) * job.num_gpus
            level = bisect.bisect_right(self.thresholds, attained)
            if level < len(self.thresholds):
                cross = now + (self.thresholds[level] - attained) / job.num_gpus
                until = min(until, cross - 1e-9 * max(1.0, abs(cross)))  # conservative: recompute near the edge
        order = sorted(((self.priority(j, now), j) for j in view.running.values()), key=lambda pair: pair[0])
        self._running = (version, until, order)
        return order, until

    def _promote(self, view) -> None:
        """Re-key waiting jobs that starve by now (they go to the top queue)."""
        now, heap = view.now, self._starving
        later = []
        while heap and heap[0][0] <= now + 1e-9 * max(1.0, abs(now)):
            entry = heapq.heappop(heap)
            _, _, job, since = entry
            if job.state != QUEUED or job.queued_since != since:
                continue  # placed, or waiting again since another time (a newer entry covers it)
            if now - since >= self.starve_factor * max(job.run_time, 1.0):
                self._promoted.add((job.job_id, since))
                view.queue.rekey(job)
            else:
                later.append(entry)  # within rounding of the edge: look again next round
        for entry in later:
            heapq.heappush(heap, entry)
