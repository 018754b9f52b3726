"""Tiresias: discretized two-dimensional least-attained-service (2D-LAS).

Attained service is GPU-seconds (GPUs x time run). Thresholds split jobs into
priority queues (fewer attained GPU-seconds = higher priority), FIFO by
arrival inside a queue. Each round the highest-priority jobs that fit keep or
get GPUs (exclusive); running jobs that no longer fit are preempted. Rounds
run at every arrival and every `period_s` so that demotions take effect.
Optional starvation guard: a job that has waited `starve_factor` x its run
time is promoted to the top queue (Tiresias's STARVELIMIT).

A round is the walk through all jobs, running and waiting, in priority order,
each taking GPUs if enough are left at its turn. It is kept cheap without
changing its outcome: a waiting job's attained service does not change, so the
queue holds waiting jobs in priority order (its key; a starving job is re-keyed
when it is promoted); a round in which nothing changed since one that started
nothing is skipped, and one in which idle GPUs hold every waiting job starts
them all. On one device type the running jobs are indexed by priority with
their GPU counts summed (`RunningIndex`), and the walk jumps from event to
event (`_jump_walk`): the GPUs left only shrink along the walk, so only the
first waiting job of each GPU count after the current place can start next,
and the next running job to lose its GPUs is found by a prefix-sum search. A
round then costs the jobs it starts and stops, not the running jobs. On mixed
device types (a job takes the first type with room) the walk visits every
running job in an order kept until the running set changes or the next
threshold crossing (`_walk`).
"""
from __future__ import annotations

import bisect
import heapq

from coloc.policies.base import Policy, register
from coloc.policies.fenwick import Fenwick
from coloc.sim.job import QUEUED, RUNNING


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
        self._placed: dict[int, int] = {}   # job_id -> its placement's number (view.running's order)
        self._index = RunningIndex(self.thresholds) if len(view.cluster.devices) == 1 else None
        if self._index is not None:
            view.changed_jobs = set()

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
        if self._index is not None:
            self._index.number(job)
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
        start = self._all_fit(view)
        if start is None:
            if self._index is not None and self._index.usable:
                until = self._index.update(view)
                start, stop = self._jump_walk(view)
            else:
                running, until = self._running_order(view)
                start, keep = self._walk(view, running)
                stop = [job for job in view.running.values() if job.job_id not in keep]
            if not start:
                self._idle = (queue.version, cluster.version, until)
                return
            for job in sorted(stop, key=lambda job: self._placed[job.job_id]):  # in view.running's order
                view.preempt(job)
        for job, device in start:
            view.place(job, cluster.pick_free(device, job.num_gpus))
            self._placed[job.job_id] = view.stats["placements"]

    def _all_fit(self, view):
        """The walk's outcome when one device type has idle GPUs for every waiting job; None otherwise.

        Then each waiting job finds room at its turn and every running job keeps its GPUs, so the
        walk would start every waiting job, in queue order: no need to walk the running jobs.
        """
        cluster, queue = view.cluster, view.queue
        if len(cluster.devices) != 1:
            return None
        device = cluster.devices[0]
        idle = cluster.free_count[device]
        if len(queue) > idle:
            return None
        waiting = list(queue.ordered())
        if sum(job.num_gpus for job in waiting) > idle:
            return None
        return [(job, device) for job in waiting if view.has_solo(device, job.workload)]

    def _jump_walk(self, view):
        """The walk on one device type, from one job that starts or stops to the next: (start, stop).

        Running jobs all fit until a started job takes their room; from then on the next running job that
        does not fit is where the running GPUs summed in priority order exceed the room. The GPUs left
        (`room`) only shrink along the walk, so of the waiting jobs of one GPU count only the first after the
        current place can be the next to start, and once one finds too little room, none of its count will.
        """
        index, queue = self._index, view.queue
        device = view.cluster.devices[0]
        room, place, taken = view.spec.gpus_of(device), None, 0  # after `place` (an entry), `taken` running GPUs
        counts, start, stop = set(queue.sizes()), [], []
        while True:
            stopping = index.first_over(taken + room) if room < index.total - taken else None
            bound = stopping[0] if stopping is not None else None
            firsts = [(queue.first_after(count, place), count) for count in counts]
            counts = {count for entry, count in firsts if entry is not None}
            chosen = None
            # past the next job to stop the room is not known yet; before it, the first job with room starts and
            # one short of room stays so (the room only shrinks): none of its count will start
            for entry, count in sorted(first for first in firsts if first[0] is not None and
                                       (bound is None or first[0] < bound)):
                ahead = index.before(entry)
                if room - (ahead - taken) >= count:
                    chosen = (entry, count, ahead)
                    break
                counts.discard(count)
            if chosen is not None:
                entry, count, ahead = chosen
                start.append((queue.job(entry), device))
                room, place, taken = room - (ahead - taken) - count, entry, ahead
            elif stopping is not None:
                job = stopping[1]
                stop.append(job)
                ahead = index.before(bound)
                room, place, taken = room - (ahead - taken), bound, ahead + job.num_gpus
            else:
                return start, stop

    def _walk(self, view, running):
        """Jobs in priority order (running merged with waiting): who keeps or gets GPUs."""
        queue, devices = view.queue, view.cluster.devices
        budget = {d: view.spec.gpus_of(d) for d in devices}
        keep, start = set(), []
        after, r, waiting, bound, stale = None, 0, None, None, True
        while True:
            room = max(budget.values())
            # the first waiting job after `after` that fits: unchanged while `after` is and it still fits the room
            if stale or (waiting is not None and waiting.num_gpus > room):
                waiting = queue.next_after(after, room) if room > 0 else None
                bound = queue.entry(waiting)[:-1] if waiting is not None else None
                stale = False
            if waiting is None and not start:
                break  # nothing more can start: every running job keeps its GPUs
            if r < len(running) and (waiting is None or running[r][0] < bound):
                job = running[r][1]
                r += 1
                if budget[job.device] >= job.num_gpus:
                    budget[job.device] -= job.num_gpus
                    keep.add(job.job_id)
                continue
            if waiting is None:
                break
            after, stale = queue.entry(waiting), True
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
        until, order, thresholds = float("inf"), [], self.thresholds
        for job in view.running.values():
            attained = job.attained + (now - job.last_update) * job.num_gpus  # as priority() computes it
            level = bisect.bisect_right(thresholds, attained)
            if level < len(thresholds):
                cross = now + (thresholds[level] - attained) / job.num_gpus
                until = min(until, cross - 1e-9 * max(1.0, abs(cross)))  # conservative: recompute near the edge
            order.append(((level, job.submit_time, job.job_id), job))
        order.sort(key=lambda pair: pair[0])
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


class RunningIndex:
    """Running jobs in Tiresias's priority order (level, then arrival), their GPU counts summed: prefix sums and
    search in O(log n), one Fenwick tree per level over the jobs' places in arrival order.

    A job's place is numbered when it is first queued (jobs arrive in (submit time, job id) order, the order
    inside a level; `usable` turns False if one did not). `update` brings the index up to the view's time:
    jobs placed or stopped since (the view's `changed_jobs` log) and jobs whose attained service crossed a
    threshold. Entries are queue entries, `(level, submit_time, job_id, job_id)`.
    """

    def __init__(self, thresholds: tuple[float, ...]):
        self.thresholds = thresholds
        self.usable = True
        self.total = 0                       # GPUs of the indexed jobs
        self._levels = [Fenwick() for _ in range(len(thresholds) + 1)]
        self._ahead = [0] * (len(thresholds) + 1)  # GPUs indexed at the levels before each level
        self._place: dict[int, int] = {}     # job_id -> place in arrival order
        self._last: tuple | None = None      # (submit_time, job_id) of the latest numbered job
        self._held: dict[int, tuple] = {}    # job_id -> (level, placed_at, job) of an indexed job
        self._at: dict[int, object] = {}     # place -> indexed job
        self._crossings: list = []           # heap of (when it may cross, job_id, placed_at)

    def number(self, job) -> None:
        """Give a job its place in arrival order when it is first queued."""
        if job.job_id not in self._place:
            key = (job.submit_time, job.job_id)
            if self._last is not None and key < self._last:
                self.usable = False
            self._last = key
            self._place[job.job_id] = len(self._place)

    def update(self, view) -> float:
        """Index the running jobs as they are now; returns the time until which no level changes."""
        running = view.running
        for job_id in view.changed_jobs:
            held, job = self._held.get(job_id), running.get(job_id)
            if held is not None and (job is None or job.placed_at != held[1]):
                self._move(held[2], held[0], None)
            if job is not None and job_id not in self._held:
                self._move(job, None, self._level(job, view.now))
        view.changed_jobs.clear()
        self._cross(view.now)
        return self._crossings[0][0] if self._crossings else float("inf")

    def before(self, entry: tuple) -> int:
        """GPUs of the indexed jobs ahead of `entry` in priority order."""
        level = entry[0]
        return self._ahead[level] + self._levels[level].before(self._place[entry[-1]])

    def first_over(self, gpus: int):
        """(entry, job) of the first job at which the GPUs summed in priority order exceed `gpus`; None if none."""
        summed = 0
        for level, tree in enumerate(self._levels):
            if summed + tree.total > gpus:
                job = self._at[tree.first_above(gpus - summed)]
                return (level, job.submit_time, job.job_id, job.job_id), job
            summed += tree.total
        return None

    def _level(self, job, now: float) -> int:
        attained = job.attained + (now - job.last_update) * job.num_gpus  # as Tiresias.priority computes it
        return bisect.bisect_right(self.thresholds, attained)

    def _move(self, job, old: int | None, new: int | None) -> None:
        """Take `job` from level `old` to level `new` (None: not indexed); note when it may cross next."""
        place = self._place[job.job_id]
        if old is not None:
            self._count(place, old, -job.num_gpus)
            del self._held[job.job_id], self._at[place]
        if new is not None:
            self._count(place, new, job.num_gpus)
            self._held[job.job_id], self._at[place] = (new, job.placed_at, job), job
            if new < len(self.thresholds):
                self._note_crossing(job, new)

    def _count(self, place: int, level: int, gpus: int) -> None:
        self._levels[level].add(place, gpus)
        self.total += gpus
        for later in range(level + 1, len(self._ahead)):
            self._ahead[later] += gpus

    def _note_crossing(self, job, level: int) -> None:
        """When `job` may cross into the next level: a little before it does (recomputed exactly then)."""
        cross = job.last_update + (self.thresholds[level] - job.attained) / job.num_gpus
        heapq.heappush(self._crossings, (cross - 1e-9 * max(1.0, abs(cross)), job.job_id, job.placed_at))

    def _cross(self, now: float) -> None:
        """Move the jobs that crossed a threshold by `now`; one within rounding of the edge is looked at again."""
        heap, later = self._crossings, []
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            held = self._held.get(entry[1])
            if held is None or held[1] != entry[2]:
                continue  # stopped, or placed again since (a newer entry covers it)
            level, _, job = held
            new = self._level(job, now)
            if new == level:
                later.append(entry)
            else:
                self._count(self._place[job.job_id], level, -job.num_gpus)
                self._count(self._place[job.job_id], new, job.num_gpus)
                self._held[job.job_id] = (new, held[1], job)
                if new < len(self.thresholds):
                    self._note_crossing(job, new)
        for entry in later:
            heapq.heappush(heap, entry)
