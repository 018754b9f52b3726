"""Predicted time until each running job ends, kept across rounds (coloc's wait rule).

A running job's predicted end is its remaining work at `now` over its solo speed and over its
predicted factor (given by the policy: the product of its predicted normalized throughputs next to
its co-runners, least over its GPUs): remaining_at(now) / speed / factor. Only the jobs the view
logs as changed since the last look (`SchedulerView.changed_jobs`: placed, stopped, rate or
co-runners changed, probed) are read again; the others' progress state is kept in arrays, and the
ends are computed from them element-wise with the same floating-point operations, so they are the
values a loop over the running jobs gives, bit for bit. Reading (`refresh`) and computing (`kept_times`,
`least`) are apart, so a policy can read the ends at one moment of a round and compute them later in it.

The wait rule asks only for the k-th least end, k small, in round after round. `least` computes it
from a few candidate jobs, not all: between reads a job's end falls linearly in time, at its
rate / speed / factor, so once all ends are computed (at t0), every job outside the least few stays
above the line theta - slope (t - t0), theta the least end outside them at t0 and slope the
greatest rate of fall of any job. A job read again later joins the candidates unless it, too, stays above that
line from then on. At a later time the candidates' ends, computed exactly, that lie below the line
(less an allowance for rounding far above the operations' few units in the last place) are the least
ends of all, in order; when fewer than k + 1 do, or too many jobs joined the candidates, all ends
are computed again and the candidates chosen anew. So the values are a full sort's, bit for bit.
"""
from __future__ import annotations

import bisect
import math
from collections.abc import Callable

import numpy as np

from coloc.sim.job import Job

REMAINING, RATE, LAST_UPDATE, SPEED, FACTOR = range(5)
NEAR = 64  # candidates for the least ends chosen at least (twice k + 1 where the k-th least is asked)
NEAR_GROWTH = 4  # the candidates are chosen anew once jobs read again have made them this many times as many
SAFETY = 1e-12  # the line's allowance for rounding, relative to the magnitudes of the terms (each operation: 1.1e-16)


class PredictedEnds:
    """The running jobs' predicted ends, sorted, at any time; `factor(job)` is the policy's predicted factor."""

    def __init__(self, view, factor: Callable[[Job], float]):
        self._factor = factor
        self._slot: dict[int, int] = {}  # job id -> its column; the columns 0 .. len - 1 are the running jobs'
        self._ids: list[int] = []  # job id per column
        self._state = np.zeros((5, 64))
        self._read: dict[int, tuple] = {}  # job id -> its state as read, not yet written into its column
        self._out = np.empty(64)  # kept_times' values (overwritten by its next call)
        self._near: dict[int, tuple] = {}  # job id -> state, of the candidates for the least ends
        self._most_near = 0  # past this many candidates they are chosen anew
        self._line: tuple[float, float, float, float] | None = None  # (t0, theta, slope, scale): see _outside
        self._known: tuple[float, list[float]] | None = None  # (now, the least ends at now, ascending): see least
        view.changed_jobs = set(view.running)

    def __len__(self) -> int:
        """Running jobs as last read (by `refresh`)."""
        return len(self._slot)

    def refresh(self, view) -> None:
        """Read again the jobs the view logged as changed since the last look."""
        for job_id in view.changed_jobs:
            job = view.running.get(job_id)
            if job is None:
                self._drop(job_id)
            else:
                self._keep(job, view.now)
        view.changed_jobs.clear()

    def kept_times(self, now: float) -> np.ndarray:
        """The predicted times until each job ends at `now` (in no order), from the state as last read: a view
        of a buffer the next call overwrites (copy it to keep it)."""
        self._write()
        size = len(self._ids)
        if self._out.size < size:
            self._out = np.empty(self._state.shape[1])
        return ends_at(self._state[:, :size], now, self._out[:size])

    def least(self, now: float, k: int) -> float:
        """The (k+1)-th least predicted end at `now`, from the state as last read (k < len(self)): the value a
        sort of kept_times(now) has at place k, found among the candidates (see the module docstring)."""
        if not 0 <= k < len(self._ids):
            raise ValueError(f"PredictedEnds.least: place {k} asked among {len(self._ids)} running jobs")
        known = self._known
        if known is None or known[0] != now or k >= len(known[1]):
            known = self._known = (now, self._least_known(now, k))
        return known[1][k]

    def _least_known(self, now: float, k: int) -> list[float]:
        """More than k of the least ends at `now`, ascending: the candidates' below the line, or, when fewer than
        k + 1 are, the least of all ends, the candidates chosen anew. (The candidates are few: Python's float
        operations, the same as numpy's element-wise ones, cost less than arrays here.)"""
        line = self._line
        if line is not None and now >= line[0] and len(self._near) > k:
            values = sorted([(remaining - rate * (now - last_update)) / speed / factor
                             for remaining, rate, last_update, speed, factor in self._near.values()])
            if line[1] == math.inf:  # every running job is a candidate
                return values
            known = bisect.bisect_right(values, self._limit(now))
            if known > k:
                return values[:known]
        return self._choose(now, k)

    def _choose(self, now: float, k: int) -> list[float]:
        """Compute every end at `now`; the least max(NEAR, 2 (k + 1)) become the candidates and the line is drawn
        under the others. Returns the candidates' ends, ascending."""
        times = self.kept_times(now)
        size = max(NEAR, 2 * (k + 1))
        self._most_near = NEAR_GROWTH * size
        if len(times) <= size:
            self._near = dict(zip(self._ids, map(tuple, self._state[:, :len(times)].T.tolist()), strict=True))
            self._line = (now, math.inf, 0.0, 0.0)
            return np.sort(times).tolist()
        order = np.argpartition(times, size)
        near, theta = order[:size], float(times[order[size]])
        state = self._state[:, :len(times)]  # slope and scale over every job, the candidates too (no copy; as wide)
        per_work = state[SPEED] * state[FACTOR]
        slope = float((state[RATE] / per_work).max())
        worked = np.abs(state[RATE] * (now - state[LAST_UPDATE]))
        scale = float(((np.abs(state[REMAINING]) + worked) / per_work + np.abs(times)).max())
        self._line = (now, theta, slope, scale)
        ids = self._ids
        self._near = dict(zip([ids[i] for i in near.tolist()], map(tuple, self._state[:, near].T.tolist()), strict=True))
        return np.sort(times[near]).tolist()

    def _limit(self, now: float) -> float:
        """Every job outside the candidates has its end at `now`, as computed, at or above this."""
        t0, theta, slope, scale = self._line
        fallen = slope * (now - t0)
        return theta - fallen - SAFETY * (scale + abs(theta) + 4.0 * fallen + 1.0)

    def _outside(self, state: tuple, now: float) -> bool:
        """Whether a job read at `now` with this state stays above the line from now on, so need not be a
        candidate (the line's scale then covers it).

        In exact arithmetic the job's end falls at rate / speed / factor; if that is at most the line's slope
        and its end now is above the line with the allowance, its computed end stays above the line at every
        later time. The allowance covers each computed end's rounding, a few units in the last place of
        scale = (|remaining| + |rate (now - last update)|) / speed / factor + |end|, which grows by at most
        twice the slope per second (so the line keeps the largest scale of its outside jobs)."""
        t0, theta, slope, scale = self._line
        remaining, rate, last_update, speed, factor = state
        if theta == math.inf or rate / speed / factor > slope:  # (theta inf: every running job is a candidate)
            return False
        worked = rate * (now - last_update)
        end = (remaining - worked) / speed / factor
        size = (abs(remaining) + abs(worked)) / speed / factor + abs(end)
        self._line = (t0, theta, slope, max(scale, size))
        if end >= self._limit(now):
            return True
        self._line = (t0, theta, slope, scale)
        return False

    def _write(self) -> None:
        """Write the states read since the last computation into their columns."""
        if self._read:
            self._state[:, [self._slot[job_id] for job_id in self._read]] = np.array(list(self._read.values())).T
            self._read.clear()

    def _keep(self, job: Job, now: float) -> None:
        """Read the job's state (written into its column when the ends are next computed); a job that may fall
        below the line joins the candidates."""
        job_id = job.job_id
        if job_id not in self._slot:
            slot = self._slot[job_id] = len(self._ids)
            self._ids.append(job_id)
            if slot == self._state.shape[1]:
                self._state = np.concatenate([self._state, np.zeros_like(self._state)], axis=1)
        state = self._read[job_id] = (job.remaining, job.rate, job.last_update, job.speed, self._factor(job))
        self._known = None
        if job_id in self._near:
            self._near[job_id] = state
        elif self._line is not None and not self._outside(state, now):
            self._near[job_id] = state
            if len(self._near) > self._most_near:
                self._line = None  # (chosen anew at the next `least`)

    def _drop(self, job_id: int) -> None:
        """Take the job's column out: the last column moves into it."""
        slot = self._slot.pop(job_id, None)
        if slot is None:
            return
        self._read.pop(job_id, None)
        self._near.pop(job_id, None)
        self._known = None
        last = self._ids.pop()
        if last != job_id:
            self._state[:, slot] = self._state[:, len(self._ids)]
            self._ids[slot] = last
            self._slot[last] = slot


def ends_at(state: np.ndarray, now: float, out: np.ndarray | None = None) -> np.ndarray:
    """Predicted times until the jobs of `state` (columns: remaining, rate, last update, speed, factor) end at
    `now`: (remaining - rate (now - last update)) / speed / factor element-wise, into `out` when given (one
    buffer, the same operations: no new array per operation)."""
    out = np.subtract(now, state[LAST_UPDATE], out=out)
    np.multiply(state[RATE], out, out=out)
    np.subtract(state[REMAINING], out, out=out)  # Job.remaining_at
    np.divide(out, state[SPEED], out=out)
    return np.divide(out, state[FACTOR], out=out)
