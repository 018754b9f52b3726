"""REFERENCE wait queue, kept only for the exactness test: the queued jobs in the order pushed and one sorted list of
their entries, every question answered by walking that list from its start (no buckets, no sorted chunks). The reference runs use it in place of
coloc.sim.queue.JobQueue (tests/test_sim_exactness.py patches the view's), so the fast queue's indexes are held to
it. Entries, version counting and the order of iteration (jobs in the order pushed, a re-keyed job last) are the
fast queue's.
"""
from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterator


def fifo_key(job) -> tuple:
    return (job.submit_time, job.job_id)


class JobQueue:
    """Queued jobs; `key(job)` fixed while the job waits (or the job re-keyed)."""

    def __init__(self, key: Callable[..., tuple] = fifo_key):
        self.key = key
        self.version = 0
        self._queued: dict[int, tuple] = {}  # job_id -> (entry, job), in the order pushed
        self._entries: list[tuple] = []  # every queued job's entry, sorted

    def __len__(self) -> int:
        return len(self._queued)

    def __contains__(self, job) -> bool:
        return job.job_id in self._queued

    def __iter__(self) -> Iterator:
        return iter([job for _, job in self._queued.values()])

    def push(self, job) -> None:
        if job.job_id in self._queued:
            raise RuntimeError(f"job {job.job_id} is already queued")
        entry = (*self.key(job), job.job_id)
        self._queued[job.job_id] = (entry, job)
        bisect.insort(self._entries, entry)
        self.version += 1

    def remove(self, job) -> None:
        self.version += 1
        entry, _ = self._queued.pop(job.job_id)
        del self._entries[bisect.bisect_left(self._entries, entry)]

    def rekey(self, job) -> None:
        self.remove(job)
        self.push(job)

    def entry(self, job) -> tuple:
        return self._queued[job.job_id][0]

    def _walk(self, keep: Callable[..., bool] = lambda job: True, after: tuple | None = None,
              snapshot: bool = False) -> Iterator:
        """The queued jobs that `keep` keeps, by entry (after `after`; None: from the start); `snapshot`: over the
        entries as they stand now, safe while jobs leave the queue (a job that left is not given)."""
        i = 0 if after is None else bisect.bisect_right(self._entries, after)
        entries = self._entries[i:] if snapshot else itertools.islice(self._entries, i, None)
        for entry in entries:
            queued = self._queued.get(entry[-1])
            if queued is not None and queued[0] == entry and keep(queued[1]):
                yield queued[1]

    def _first(self, keep: Callable[..., bool], after: tuple | None = None):
        """The first queued job by entry (after `after`) that `keep` keeps; None if none."""
        return next(self._walk(keep, after), None)

    def best(self, max_gpus: int | None = None):
        """First job by entry needing at most `max_gpus` GPUs (any if None); None if none."""
        return self._first(lambda job: max_gpus is None or job.num_gpus <= max_gpus)

    def best_single(self, skip=frozenset()):
        """First single-GPU job by entry whose workload is not in `skip`; None if none."""
        return self._first(lambda job: job.num_gpus == 1 and job.workload not in skip)

    def next_after(self, entry: tuple | None, max_gpus: int):
        """First job by entry after `entry` (None: from the start) needing at most `max_gpus` GPUs; None if none."""
        return self._first(lambda job: job.num_gpus <= max_gpus, entry)

    def first_singles(self, k: int) -> list:
        return list(itertools.islice(self._walk(lambda job: job.num_gpus == 1), k))

    def first(self, k: int) -> list:
        return list(itertools.islice(self._walk(), k))

    def ordered(self, max_gpus: int | None = None) -> Iterator:
        """Jobs by entry, each given only while it is still queued."""
        return self._walk(lambda job: max_gpus is None or job.num_gpus <= max_gpus, snapshot=True)
