"""A queued job wider than the idle GPUs, and what a single-GPU job's choice of GPU costs it (coloc's rule).

coloc's rule (coloc.policies.coloc) fills idle GPUs first and weighs sharing only when none is idle. An idle GPU is
not free, though, while a queued job needs more GPUs than are idle: a single-GPU job that takes one puts that job's
start back to the next GPU predicted to fall idle. Taken again and again by the single-GPU jobs that keep arriving,
the idle GPUs never add up, and a wide job starts only when enough of them fall idle together with no single-GPU job
queued. So while such a job waits (`blocked`: the first in queue order):

* the single-GPU jobs ahead of it in queue order, whose alternative is an idle GPU, are offered to share first,
  under coloc's rule with the wait replaced by what taking the idle GPU instead costs the blocked job
  (`BlockedStart.delay`): its predicted start with the idle GPU taken, less its predicted start with the job packed
  on the GPU chosen (which may keep that GPU busy longer); one that does not share takes an idle GPU as before;
* the jobs behind it take idle GPUs it runs on only if predicted to end (alone) before it is predicted to start
  (`fill_idle_keeping`: EASY backfilling, Lifka 1995, on predicted times); the others wait, or share where coloc's
  wait rule lets them, their wait at least until the blocked job's predicted start.

The blocked job starts when the GPUs it needs are idle: on each device type that runs it, the idle ones and then
the busy ones in the order they are predicted to fall idle, at the last predicted end of their residents (the
policy's predicted ends, as its wait rule reads them); a GPU taken now by a job of solo time t falls idle at now + t.
The order is kept sorted per device type, and each start asked is a rank in it with one time moved: O(log GPUs).
"""
from __future__ import annotations

import bisect
import math
from collections.abc import Callable

from coloc.sim.job import Job


def blocked(view) -> Job | None:
    """The first queued job in queue order that needs more GPUs than any device type has idle; None if there is
    none or no GPU is idle."""
    queue, free = view.queue, view.cluster.max_free()
    if free == 0:
        return None
    heads = [queue.first_after(size, None) for size in queue.sizes() if size > free]
    heads = [head for head in heads if head is not None]
    return queue.job(min(heads)) if heads else None


class BlockedStart:
    """The predicted start of `job` (blocked) as the cluster is now, and as a single-GPU job's placement would move
    it; `end_of(running job)`: its predicted end (absolute)."""

    def __init__(self, view, job: Job, end_of: Callable[[Job], float]):
        self._view, self._job = view, job
        self._idle_at: dict[str, dict[int, float]] = {}  # device -> {busy GPU: when it falls idle}
        for device in view.cluster.devices:
            if view.has_solo(device, job.workload):
                self._idle_at[device] = {}
        for running in view.running.values():
            idle_at = self._idle_at.get(running.device)
            if idle_at is not None:
                end = end_of(running)
                for gpu in running.gpus:
                    if end > idle_at.get(gpu, -math.inf):
                        idle_at[gpu] = end
        self._sorted = {device: sorted(idle_at.values()) for device, idle_at in self._idle_at.items()}

    def start(self, moved: tuple[str, float | None, float] | None = None) -> float:
        """The blocked job's predicted start (absolute; inf if never): the least over the device types that run it
        of when the GPUs it needs are idle. `moved`: (device, a busy GPU's idle time or None for an idle GPU, its
        new idle time), one GPU's change."""
        cluster, best = self._view.cluster, math.inf
        for device, times in self._sorted.items():
            need = self._job.num_gpus - cluster.free_count[device]
            if moved is not None and moved[0] == device:
                _, old, new = moved
                need += old is None  # an idle GPU taken: one more busy GPU to wait for
                best = min(best, nth_least(times, need, drop=old, add=new))
            else:
                best = min(best, nth_least(times, need))
        return best

    def delay(self, single: Job, gpu: int, busy_until: float) -> float | None:
        """How much later the blocked job is predicted to start if `single` takes an idle GPU (of the first device
        type that runs it and has one, where it would start) than if it joins `gpu`, which it keeps busy until
        `busy_until` (absolute); None if it would start on no idle GPU now."""
        view = self._view
        cluster, now = view.cluster, view.now
        for device in cluster.devices:
            if cluster.free_count[device] and view.has_solo(device, single.workload):
                back = now + single.remaining / view.speed(device, single.workload)
                taking = self.start((device, None, back))
                break
        else:
            return None
        there = cluster.gpu_device[gpu]
        old = self._idle_at.get(there, {}).get(gpu)
        joining = self.start((there, old, max(old, busy_until))) if old is not None else self.start()
        return 0.0 if taking == joining else taking - joining  # (0 where it never starts either way)


def fill_idle_keeping(view, wide: Job, start_of: Callable[[], float], lookahead: int | None) -> None:
    """coloc.policies.base.fill_idle with the idle GPUs kept for `wide` (blocked): queued jobs start on idle GPUs in
    queue order; one behind `wide` only where `wide` does not run, or if it is predicted to end (alone) before
    `wide` is predicted to start (`start_of()`, absolute): EASY backfilling on predicted times. At most `lookahead`
    jobs are passed over (None: any number)."""
    queue, cluster = view.queue, view.cluster
    mark, entry, passed = queue.entry(wide), None, 0
    start = start_of()
    while cluster.max_free() > 0 and (lookahead is None or passed < lookahead):
        job = queue.next_after(entry, cluster.max_free())
        if job is None:
            return
        entry = queue.entry(job)
        device = next((d for d in cluster.devices
                       if cluster.free_count[d] >= job.num_gpus and view.has_solo(d, job.workload)), None)
        if device is None or (entry > mark and view.has_solo(device, wide.workload)
                              and view.now + job.remaining / view.speed(device, job.workload) > start):
            passed += 1
            continue
        view.place(job, cluster.pick_free(device, job.num_gpus))
        start = start_of()  # (a GPU it takes falls idle at its end)


def nth_least(times: list[float], n: int, drop: float | None = None, add: float | None = None) -> float:
    """The n-th least (1-based) of ascending `times` with one value equal to `drop` taken out and `add` put in (each
    if given); -inf for n < 1 (nothing to wait for), inf if there are fewer than n."""
    if n < 1:
        return -math.inf
    gone = bisect.bisect_left(times, drop) if drop is not None else None  # (its place: any of equal values)
    size = len(times) - (gone is not None)

    def at(i: int) -> float:
        return times[i] if gone is None or i < gone else times[i + 1]

    i = n - 1
    if add is not None:
        place = bisect.bisect_right(times, add) - (gone is not None and gone < bisect.bisect_right(times, add))
        if i == place:
            return add
        if i > place:
            i -= 1
    return at(i) if i < size else math.inf
