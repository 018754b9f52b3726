"""Predicted time until each running job ends, kept across rounds (coloc's wait rule).

A running job's predicted end is its remaining work at `now` over its solo speed and over its
predicted factor (given by the policy: the product of its predicted normalized throughputs next to
its co-runners, least over its GPUs): remaining_at(now) / speed / factor. Only the jobs the view
logs as changed since the last look (`SchedulerView.changed_jobs`: placed, stopped, rate or
co-runners changed, probed) are read again; the others' progress state is kept in arrays, and the
ends are computed from them element-wise with the same floating-point operations, so they are the
values a loop over the running jobs gives, bit for bit. Reading (`refresh`) and computing (`kept_times`)
are apart, so a policy can read the ends at one moment of a round and compute them later in it.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from coloc.sim.job import Job

REMAINING, RATE, LAST_UPDATE, SPEED, FACTOR = range(5)


class PredictedEnds:
    """The running jobs' predicted ends, sorted, at any time; `factor(job)` is the policy's predicted factor."""

    def __init__(self, view, factor: Callable[[Job], float]):
        self._factor = factor
        self._slot: dict[int, int] = {}  # job id -> its column; the columns 0 .. len - 1 are the running jobs'
        self._ids: list[int] = []  # job id per column
        self._state = np.zeros((5, 64))
        self._read: dict[int, tuple] = {}  # job id -> its state as read, not yet written into its column
        self._out = np.empty(64)  # kept_times' values (overwritten by its next call)
        view.changed_jobs = set(view.running)

    def __len__(self) -> int:
        """Running jobs as last read (by `refresh`)."""
        return len(self._slot)

    def sorted_at(self, view) -> np.ndarray:
        """Predicted times until each running job ends, at view.now, ascending."""
        self.refresh(view)
        return np.sort(self.kept_times(view.now))

    def refresh(self, view) -> None:
        """Read again the jobs the view logged as changed since the last look."""
        for job_id in view.changed_jobs:
            job = view.running.get(job_id)
            if job is None:
                self._drop(job_id)
            else:
                self._keep(job)
        view.changed_jobs.clear()

    def kept_times(self, now: float) -> np.ndarray:
        """The predicted times until each job ends at `now` (in no order), from the state as last read: a view
        of a buffer the next call overwrites (copy it to keep it)."""
        if self._read:
            self._state[:, [self._slot[job_id] for job_id in self._read]] = np.array(list(self._read.values())).T
            self._read.clear()
        size = len(self._ids)
        state = self._state[:, :size]
        if self._out.size < size:
            self._out = np.empty(self._state.shape[1])
        out = self._out[:size]  # (one buffer, the same operations: no new array per operation)
        np.subtract(now, state[LAST_UPDATE], out=out)
        np.multiply(state[RATE], out, out=out)
        np.subtract(state[REMAINING], out, out=out)  # Job.remaining_at
        np.divide(out, state[SPEED], out=out)
        return np.divide(out, state[FACTOR], out=out)

    def _keep(self, job: Job) -> None:
        """Read the job's state (written into its column when the ends are next computed)."""
        if job.job_id not in self._slot:
            slot = self._slot[job.job_id] = len(self._ids)
            self._ids.append(job.job_id)
            if slot == self._state.shape[1]:
                self._state = np.concatenate([self._state, np.zeros_like(self._state)], axis=1)
        self._read[job.job_id] = (job.remaining, job.rate, job.last_update, job.speed, self._factor(job))

    def _drop(self, job_id: int) -> None:
        """Take the job's column out: the last column moves into it."""
        slot = self._slot.pop(job_id, None)
        if slot is None:
            return
        self._read.pop(job_id, None)
        last = self._ids.pop()
        if last != job_id:
            self._state[:, slot] = self._state[:, len(self._ids)]
            self._ids[slot] = last
            self._slot[last] = slot
