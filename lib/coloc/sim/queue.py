"""The wait queue, ordered by a policy's key and bucketed by GPU count.

Buckets let a policy find the best job that fits in `n` idle GPUs without
scanning jobs too large to fit: the best fitting job is the smallest head
among buckets of size <= n. Each bucket is a SortedEntries (coloc.sim.sorted_entries), so that a queue of
tens of thousands of jobs does not move them all at each push or removal.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator

from coloc.sim.job import Job
from coloc.sim.sorted_entries import SortedEntries


def fifo_key(job: Job) -> tuple:
    return (job.submit_time, job.job_id)


class JobQueue:
    """Queued jobs; `key(job)` must be fixed while the job waits (or the job re-keyed, see `rekey`).

    `version` counts the pushes and removals, so a policy can tell that the queue is unchanged.
    """

    def __init__(self, key: Callable[[Job], tuple] = fifo_key):
        self.key = key
        self.version = 0
        self._buckets: dict[int, SortedEntries] = {}  # by GPU count, the counts with a job waiting
        self._entry: dict[int, tuple] = {}
        self._jobs: dict[int, Job] = {}
        self._singles: dict[str, SortedEntries] = {}   # single-GPU jobs by workload (workloads with one waiting)

    def __len__(self) -> int:
        return len(self._jobs)

    def __contains__(self, job: Job) -> bool:
        return job.job_id in self._jobs

    def __iter__(self) -> Iterator[Job]:
        """All queued jobs, in no particular order."""
        return iter(list(self._jobs.values()))

    def push(self, job: Job) -> None:
        if job.job_id in self._jobs:
            raise RuntimeError(f"job {job.job_id} is already queued")
        entry = (*self.key(job), job.job_id)
        bucket = self._buckets.get(job.num_gpus)
        if bucket is None:
            bucket = self._buckets[job.num_gpus] = SortedEntries()
        bucket.insert(entry)
        if job.num_gpus == 1:
            single = self._singles.get(job.workload)
            if single is None:
                single = self._singles[job.workload] = SortedEntries()
            single.insert(entry)
        self._entry[job.job_id] = entry
        self._jobs[job.job_id] = job
        self.version += 1

    def remove(self, job: Job) -> None:
        self.version += 1
        entry = self._entry.pop(job.job_id)
        del self._jobs[job.job_id]
        bucket = self._buckets[job.num_gpus]
        bucket.remove(entry)
        if not bucket:
            del self._buckets[job.num_gpus]  # (rounds look at every bucket listed: only those with jobs)
        if job.num_gpus == 1:
            single = self._singles[job.workload]
            single.remove(entry)
            if not single:
                del self._singles[job.workload]

    def rekey(self, job: Job) -> None:
        """Place a waiting job anew by its key, for a policy whose order of a job changes while it waits."""
        self.remove(job)
        self.push(job)

    def entry(self, job: Job) -> tuple:
        """The queued job's place in the order: (*key(job), job_id)."""
        return self._entry[job.job_id]

    def job(self, entry: tuple) -> Job:
        """The queued job of an entry."""
        return self._jobs[entry[-1]]

    def sizes(self) -> list[int]:
        """The GPU counts with a job waiting."""
        return list(self._buckets)

    def first_after(self, num_gpus: int, entry: tuple | None) -> tuple | None:
        """The first entry after `entry` (None: from the start) among the jobs needing `num_gpus` GPUs."""
        bucket = self._buckets.get(num_gpus)
        return None if bucket is None else bucket.first_after(entry)

    def best(self, max_gpus: int | None = None) -> Job | None:
        """First job in key order needing at most `max_gpus` GPUs (any if None)."""
        best_entry = None
        for size, bucket in self._buckets.items():
            if max_gpus is None or size <= max_gpus:
                head = bucket.first()
                if best_entry is None or head < best_entry:
                    best_entry = head
        return None if best_entry is None else self._jobs[best_entry[-1]]

    def best_single(self, skip: set[str] | frozenset = frozenset()) -> Job | None:
        """First single-GPU job in key order whose workload is not in `skip`."""
        best_entry = None
        for workload, entries in self._singles.items():
            if workload not in skip:
                head = entries.first()
                if best_entry is None or head < best_entry:
                    best_entry = head
        return None if best_entry is None else self._jobs[best_entry[-1]]

    def single_heads(self) -> list[tuple[tuple, str]]:
        """(first entry, workload) of each workload with a single-GPU job waiting, in no fixed order."""
        return [(entries.first(), workload) for workload, entries in self._singles.items()]

    def first_single(self, workload: str) -> tuple | None:
        """The first entry among the single-GPU jobs of `workload`; None if none waits."""
        entries = self._singles.get(workload)
        return None if entries is None else entries.first()

    def first_singles(self, k: int) -> list[Job]:
        """The first `k` single-GPU jobs in key order."""
        singles = self._buckets.get(1)
        return [] if singles is None else [self._jobs[entry[-1]] for entry in singles.head(k)]

    def ordered(self, max_gpus: int | None = None) -> Iterator[Job]:
        """Jobs in key order (a snapshot: safe to place jobs while iterating)."""
        lists = [list(b) for size, b in self._buckets.items() if max_gpus is None or size <= max_gpus]
        for entry in heapq.merge(*lists):
            job = self._jobs.get(entry[-1])
            if job is not None:
                yield job

    def first(self, k: int) -> list[Job]:
        """The first `k` jobs in key order."""
        heads = [entry for bucket in self._buckets.values() for entry in bucket.head(k)]
        return [self._jobs[entry[-1]] for entry in sorted(heads)[:k]]  # (a few buckets: one sort beats a merge)
