"""Tiresias: discretized two-dimensional least-attained-service (2D-LAS).

Attained service is GPU-seconds (GPUs x time run). Thresholds split jobs into
priority queues (fewer attained GPU-seconds = higher priority), FIFO by
arrival inside a queue. Each round the highest-priority jobs that fit keep or
get GPUs (exclusive); running jobs that no longer fit are preempted. Rounds
run at every arrival and every `period_s` so that demotions take effect.
Optional starvation guard: a job that has waited `starve_factor` x its run
time is promoted to the top queue (Tiresias's STARVELIMIT).

A round is the walk through all jobs, running and waiting, in priority order,
each taking GPUs (on the first device type with room) if enough are left at
its turn. It is kept cheap without changing its outcome: a waiting job's
attained service does not change, so the queue holds waiting jobs in priority
order (its key; a starving job is re-keyed when it is promoted); a round in
which nothing changed since one that started nothing is skipped, and one in
which idle GPUs hold every waiting job starts them all. On one device type a
round's outcome is a fixed point: walked again, every job finds the same room
at its turn, so jobs kept or started fit again and jobs stopped or passed over
do not. So a round is skipped as well when nothing changed since one that acted
(no arrival, completion or threshold crossing). Not so on several device types,
where a stopped job may find room on another type when walked again as a
waiting job, nor with the starvation guard, where a promoted job that starts
falls back to the queue of its attained service. The running jobs are
indexed by priority with their GPUs summed per device type (`RunningIndex`,
kept from the view's change log and the threshold crossings), and the walk
jumps from event to event (`_walk`): the GPUs left only shrink along it, so
only the first waiting job of each GPU count after the current place can start
next, and the next running job to lose its GPUs is found by a prefix-sum
search. A round costs the jobs it starts and stops, not the running jobs.
"""
from __future__ import annotations

import bisect
import heapq
import itertools
import math
import numbers

from coloc.policies.base import Policy, register
from coloc.policies.fenwick import Fenwick
from coloc.sim.job import QUEUED, RUNNING


def _thresholds(values) -> tuple[float, ...]:
    """Tiresias's queue thresholds (attained GPU-seconds) as floats; ValueError unless each is a finite, positive
    number and each above the last (a queue boundary; none: one queue)."""
    items = tuple(values)
    numeric = all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in items)
    out = tuple(float(v) for v in items) if numeric else ()
    if (not numeric or any(not 0 < t < math.inf for t in out) or any(b <= a for a, b in itertools.pairwise(out))):
        raise ValueError(f"tiresias thresholds {items!r}: expected finite, positive, strictly increasing "
                         f"GPU-seconds, e.g. (3600.0, 36000.0)")
    return out


@register("tiresias")
class Tiresias(Policy):
    shares_gpus = False

    def __init__(self, thresholds: tuple[float, ...] = (3600.0, 36000.0), period_s: float = 60.0,
                 starve_factor: float | None = None):
        self.thresholds = _thresholds(thresholds)
        self.period_s = period_s
        self.starve_factor = starve_factor
        self._index: RunningIndex | None = None

    def reset(self, view) -> None:
        super().reset(view)
        self._starving: list = []   # heap of (time it starves, seq, job, queued_since) of waiting jobs
        self._promoted: set[tuple[int, float]] = set()  # (job_id, queued_since) promoted in that wait
        self._seq = 0
        # (queue version, cluster version, valid until) of a state in which a walk would start and stop nothing
        self._settled: tuple | None = None
        running = list(view.running)  # (a view may start with jobs running: scheduling-delay measurements)
        self._placed = {job_id: i - len(running) for i, job_id in enumerate(running)}  # view.running's order
        self._index = RunningIndex(self.thresholds, view.cluster.devices)
        self._index.start(view)
        self._devices_of: dict[str, tuple[int, ...]] = {}  # workload -> device types (indexes) that run it
        self._capacity = [view.spec.gpus_of(device) for device in view.cluster.devices]  # GPUs per device type
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
        settled = self._settled
        if settled is not None and settled[:2] == (queue.version, cluster.version) and now < settled[2]:
            return
        start = self._all_fit(view)
        if start is None:
            until = self._index.update(view)
            start, stop = self._walk(view)
            if not start:
                self._settled = (queue.version, cluster.version, until)
                return
            for job in sorted(stop, key=lambda job: self._placed[job.job_id]):  # in view.running's order
                view.preempt(job)
        for job, device in start:
            view.place(job, cluster.pick_free(device, job.num_gpus))
            self._placed[job.job_id] = view.stats["placements"]
        if len(cluster.devices) == 1 and self.starve_factor is None:  # the outcome is a fixed point (module doc)
            self._settled = (queue.version, cluster.version, self._index.update(view))

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

    def _walk(self, view):
        """The walk, from one job that starts or stops to the next: (jobs to start with their device, jobs to stop).

        Running jobs all fit until a started job takes their room; from then on the next running job that
        does not fit is where the running GPUs of its device type, summed in priority order, exceed the room.
        The GPUs left on each device type (`room`) only shrink along the walk, so of the waiting jobs of one
        GPU count only the first after the current place that may still find room can be the next to start;
        a waiting job that finds too little room tells, for each device type, the GPU count that no longer
        fits there (`full`).
        """
        index, queue, devices = self._index, view.queue, view.cluster.devices
        room = list(self._capacity)
        taken = [0] * len(devices)   # running GPUs of each device type up to the place reached (kept or stopped)
        full = [gpus + 1 for gpus in room]  # per device type, the least GPU count that can no longer fit there
        start, stop = [], []
        firsts = {}  # GPU count -> entry of the first waiting job after the place reached that may find room
        for count in queue.sizes():
            self._advance(view, firsts, count, None, full)
        while True:
            stopping = index.first_stop(room, taken)
            chosen = None
            while chosen is None and firsts:
                count = min(firsts, key=firsts.__getitem__)
                entry = firsts[count]
                if stopping is not None and entry > stopping[0]:
                    break  # past the next job to stop, the room is not known yet
                runs_on = self._runs_on(view, queue.job(entry).workload)
                if all(count >= full[d] for d in runs_on):  # its device types filled up since it was found
                    self._advance(view, firsts, count, entry, full)
                    continue
                ahead = index.before(entry)
                left = [room[d] - (ahead[d] - taken[d]) for d in range(len(devices))]
                for where in runs_on:
                    if left[where] >= count:
                        chosen = (entry, where, ahead, left)
                        break
                else:
                    full = [min(least, gpus + 1) for least, gpus in zip(full, left, strict=True)]
                    self._advance(view, firsts, count, entry, full)
            if chosen is not None:
                entry, where, taken, room = chosen
                job = queue.job(entry)
                room[where] -= job.num_gpus
                start.append((job, devices[where]))
                self._advance(view, firsts, job.num_gpus, entry, full)
            elif stopping is not None:
                bound, job, where = stopping
                ahead = index.before(bound)
                room = [room[d] - (ahead[d] - taken[d]) for d in range(len(devices))]
                taken = ahead
                taken[where] += job.num_gpus
                stop.append(job)
            else:
                return start, stop

    def _advance(self, view, firsts: dict, count: int, after, full: list) -> None:
        """Set `firsts[count]` to the first waiting job of `count` GPUs after `after` with a device type not full
        for it; drop `count` if there is none."""
        queue = view.queue
        entry = queue.first_after(count, after) if count < max(full) else None
        if len(full) > 1:  # (with one device type, `count < max(full)` says that it is not full)
            while entry is not None and all(count >= full[d] for d in self._runs_on(view, queue.job(entry).workload)):
                entry = queue.first_after(count, entry)  # its device types are full for its count
        if entry is None:
            firsts.pop(count, None)
        else:
            firsts[count] = entry

    def _runs_on(self, view, workload: str) -> tuple[int, ...]:
        """Indexes of the device types that run `workload`, in the cluster's order."""
        runs_on = self._devices_of.get(workload)
        if runs_on is None:
            runs_on = self._devices_of[workload] = tuple(
                d for d, device in enumerate(view.cluster.devices) if view.has_solo(device, workload))
        return runs_on

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
    """Running jobs in Tiresias's priority order (level, then arrival), their GPUs summed per device type: prefix
    sums and search in O(log n), one Fenwick tree per device type and level over the jobs' places in arrival order.

    A job's place is numbered when it is first queued: jobs arrive in (submit time, job id) order, the order
    inside a level. `update` brings the index up to the view's time: jobs placed or stopped since (the view's
    `changed_jobs` log) and jobs whose attained service crossed a threshold. Entries are queue entries,
    `(level, submit_time, job_id, job_id)`; device types are their indexes in the cluster's order.
    """

    def __init__(self, thresholds: tuple[float, ...], devices: tuple[str, ...]):
        self.thresholds = thresholds
        self._device = {device: d for d, device in enumerate(devices)}
        levels = len(thresholds) + 1
        self._trees = [[Fenwick() for _ in range(levels)] for _ in devices]
        self._ahead = [[0] * levels for _ in devices]  # per device type, GPUs indexed at the levels before each
        self.totals = [0] * len(devices)               # per device type, GPUs of the indexed jobs
        self._place: dict[int, int] = {}     # job_id -> place in arrival order
        self._last: tuple | None = None      # (submit_time, job_id) of the latest numbered job
        self._disorder: str | None = None    # the first job numbered out of arrival order, if any
        self._held: dict[int, tuple] = {}    # job_id -> (level, placed_at, job) of an indexed job
        self._at: dict[int, object] = {}     # place -> indexed job
        self._crossings: list = []           # heap of (when it may cross, job_id, placed_at)

    def start(self, view) -> None:
        """Number the jobs already queued or running, in arrival order, and index the running ones."""
        for job in sorted([*view.running.values(), *view.queue], key=lambda job: (job.submit_time, job.job_id)):
            self.number(job)
        for job in view.running.values():
            self._move(job, None, self._level(job, view.now))

    def number(self, job) -> None:
        """Give a job its place in arrival order when it is first queued."""
        if job.job_id not in self._place:
            key = (job.submit_time, job.job_id)
            if self._last is not None and key < self._last and self._disorder is None:
                self._disorder = f"job {job.job_id} queued first after job {self._last[1]}"
            self._last = key
            self._place[job.job_id] = len(self._place)

    def update(self, view) -> float:
        """Index the running jobs as they are now; returns the time until which no level changes."""
        if self._disorder is not None:  # (checked here: a policy reused for another view may number its jobs first)
            raise RuntimeError(f"tiresias: {self._disorder}; expected first arrivals in (submit_time, job_id) "
                               f"order, as the Simulator makes them")
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

    def before(self, entry: tuple) -> list[int]:
        """Per device type, GPUs of the indexed jobs ahead of `entry` in priority order."""
        level, place = entry[0], self._place[entry[-1]]
        return [ahead[level] + trees[level].before(place) for ahead, trees in zip(self._ahead, self._trees, strict=True)]

    def first_stop(self, room: list[int], taken: list[int]):
        """(entry, job, device type) of the first job that finds no room, when each device type's jobs up to
        `taken` GPUs are passed and `room` GPUs are left for the rest; None if every job finds room."""
        first = None
        for d, total in enumerate(self.totals):
            if room[d] < total - taken[d]:
                found = self._first_over(d, taken[d] + room[d])
                if first is None or found[0] < first[0]:
                    first = found
        return first

    def _first_over(self, d: int, gpus: int) -> tuple:
        """(entry, job, d) of the first job of device type `d` at which its GPUs summed exceed `gpus`."""
        summed = 0
        for level, tree in enumerate(self._trees[d]):
            if summed + tree.total > gpus:
                job = self._at[tree.first_above(gpus - summed)]
                return (level, job.submit_time, job.job_id, job.job_id), job, d
            summed += tree.total
        raise AssertionError("called with fewer GPUs than indexed")

    def _level(self, job, now: float) -> int:
        attained = job.attained + (now - job.last_update) * job.num_gpus  # as Tiresias.priority computes it
        return bisect.bisect_right(self.thresholds, attained)

    def _move(self, job, old: int | None, new: int | None) -> None:
        """Take `job` from level `old` to level `new` (None: not indexed); note when it may cross next."""
        place, d = self._place[job.job_id], self._device[job.device]
        if old is not None:
            self._count(place, d, old, -job.num_gpus)
            del self._held[job.job_id], self._at[place]
        if new is not None:
            self._count(place, d, new, job.num_gpus)
            self._held[job.job_id], self._at[place] = (new, job.placed_at, job), job
            if new < len(self.thresholds):
                self._note_crossing(job, new)

    def _count(self, place: int, d: int, level: int, gpus: int) -> None:
        self._trees[d][level].add(place, gpus)
        self.totals[d] += gpus
        ahead = self._ahead[d]
        for later in range(level + 1, len(ahead)):
            ahead[later] += gpus

    def _note_crossing(self, job, level: int) -> None:
        """When `job` may cross into the next level: a little before it does (recomputed exactly then)."""
        cross = job.last_update + (self.thresholds[level] - job.attained) / job.num_gpus
        heap = self._crossings
        heapq.heappush(heap, (cross - 1e-9 * max(1.0, abs(cross)), job.job_id, job.placed_at))
        if len(heap) > 2 * len(self._held) + 1024:  # mostly entries of jobs stopped since: drop those
            heap[:] = [entry for entry in heap if self._current(entry)]
            heapq.heapify(heap)

    def _current(self, crossing: tuple) -> bool:
        """Whether a crossing entry is of a job indexed since the placement it was noted in."""
        held = self._held.get(crossing[1])
        return held is not None and held[1] == crossing[2]

    def _cross(self, now: float) -> None:
        """Move the jobs that crossed a threshold by `now`; one within rounding of the edge is looked at again."""
        heap, later = self._crossings, []
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            if not self._current(entry):
                continue  # stopped, or placed again since (a newer entry covers it)
            level, _, job = self._held[entry[1]]
            new = self._level(job, now)
            if new == level:
                later.append(entry)
            else:
                self._move(job, level, new)
        for entry in later:
            heapq.heappush(heap, entry)
