"""REFERENCE wait queue, kept only for the exactness test: the queued jobs in the order pushed, every question
answered by sorting them by their entries (no buckets, no sorted chunks). The reference runs use it in place of
coloc.sim.queue.JobQueue (tests/test_sim_exactness.py patches the view's), so the fast queue's indexes are held to
it. Entries, version counting and the order of iteration (jobs in the order pushed, a re-keyed job last) are the
fast queue's.
"""
from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator


def fifo_key(job) -> tuple:
    return (job.submit_time, job.job_id)


class JobQueue:
    """Queued jobs; `key(job)` fixed while the job waits (or the job re-keyed)."""

    def __init__(self, key: Callable[..., tuple] = fifo_key):
        self.key = key
        self.version = 0
        self._queued: dict[int, tuple] = {}  # job_id -> (entry, job), in the order pushed
        self._sorted: tuple[int, list] = (-1, [])  # (version, the queued jobs by entry) as last sorted

    def __len__(self) -> int:
        return len(self._queued)

    def __contains__(self, job) -> bool:
        return job.job_id in self._queued

    def __iter__(self) -> Iterator:
        return iter([job for _, job in self._queued.values()])

    def push(self, job) -> None:
        if job.job_id in self._queued:
            raise RuntimeError(f"job {job.job_id} is already queued")
        self._queued[job.job_id] = ((*self.key(job), job.job_id), job)
        self.version += 1

    def remove(self, job) -> None:
        self.version += 1
        del self._queued[job.job_id]

    def rekey(self, job) -> None:
        self.remove(job)
        self.push(job)

    def entry(self, job) -> tuple:
        return self._queued[job.job_id][0]

    def _pairs(self) -> list:
        """(entry, job) of every queued job, by entry (sorted again whenever the queue changed)."""
        if self._sorted[0] != self.version:
            self._sorted = (self.version, sorted(self._queued.values(), key=lambda pair: pair[0]))
        return self._sorted[1]

    def _in_order(self, keep: Callable[..., bool] = lambda job: True) -> list:
        """The queued jobs that `keep` keeps, by entry."""
        return [job for _, job in self._pairs() if keep(job)]

    def _first(self, keep: Callable[..., bool], after: tuple | None = None):
        """The first queued job by entry (after `after`, None: from the start) that `keep` keeps; None if none."""
        pairs = self._pairs()
        start = 0 if after is None else bisect.bisect_right(pairs, after, key=lambda pair: pair[0])
        return next((job for _, job in pairs[start:] if keep(job)), None)

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
        return self._in_order(lambda job: job.num_gpus == 1)[:k]

    def first(self, k: int) -> list:
        return self._in_order()[:k]

    def ordered(self, max_gpus: int | None = None) -> Iterator:
        """Jobs by entry as they stand now, each given only while it is still queued."""
        for job in self._in_order(lambda job: max_gpus is None or job.num_gpus <= max_gpus):
            if job.job_id in self._queued:
                yield job
