"""Stages of a set of co-located jobs: each stage ends when the first job finishes.

Used by ISACPP's multi-stage interference score and by coloc's JCT-aware
packing. `remaining[i]` is job i's solo remaining time on the device;
`pair_norm(i, k)` its normalized throughput next to job k; more than two jobs
multiply their pairwise values (the simulator's extrapolation).

ISACPP's multi-stage interference score, as pure functions. In a stage a job's contention is
the sum over resources of its co-located over its solo use; time is one resource (1 / its
stage factor: co-located over solo time). Its interference is the sum over its stages of
(stage length / its solo remaining time) x contention; a GPU's score is the first (new)
job's interference plus the mean of the others'. Two forms of contention:

* ``per-resource`` (the paper's): time plus every predicted resource, each job's co-located
  over solo use in the stage (its pairwise ratios multiplied over its co-runners, as norms are);
* ``two-resource`` (coloc's adaptation where only throughput and solo utilization are predicted):
  time plus, when utilizations are given, max(1, the stage's summed solo utilizations)
  (demand over the GPU's capacity).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

SCORE_FORMS = ("per-resource", "two-resource")


def run_stages(remaining: Sequence[float], pair_norm: Callable[[int, int], float]):
    """Return (finish times from now, stages), a stage = (length, active indices, factors)."""
    left = [float(r) for r in remaining]
    active = list(range(len(left)))
    finish = [0.0] * len(left)
    stages = []
    elapsed = 0.0
    while active:
        factors = {}
        for i in active:
            f = 1.0
            for k in active:
                if k != i:
                    f *= pair_norm(i, k)
            factors[i] = f
        length = min(left[i] / factors[i] for i in active)
        stages.append((length, tuple(active), factors))
        elapsed += length
        still = []
        for i in active:
            left[i] -= factors[i] * length
            if left[i] <= 1e-9 * remaining[i] + 1e-12:
                finish[i] = elapsed
            else:
                still.append(i)
        if len(still) == len(active):  # rounding: end the job that defined the stage
            i = min(active, key=lambda a: left[a] / factors[a])
            finish[i] = elapsed
            still.remove(i)
        active = still
    return finish, stages


def pair_finish_times(t_new: float, t_old: float, n_new: float, n_old: float) -> tuple[float, float]:
    """Closed form of run_stages for two jobs: finish times of (new, old)."""
    a, b = t_new / n_new, t_old / n_old
    if a <= b:
        return a, a + (t_old - n_old * a)
    return b + (t_new - n_new * b), b


def interference(remaining: Sequence[float], stages, contention: Callable[[int, tuple, dict], float]) -> list[float]:
    """Each job's interference over ``stages`` (of :func:`run_stages`): sum of length / remaining x contention.

    ``contention(i, active, factors)``: job i's contention in a stage.
    """
    out = [0.0] * len(remaining)
    for length, active, factors in stages:
        for i in active:
            out[i] += length / remaining[i] * contention(i, active, factors)
    return out


def gpu_score(interferences: Sequence[float]) -> float:
    """The first (new) job's interference plus the mean of the others' (the new job's alone when it is alone)."""
    rest = interferences[1:]
    return interferences[0] + (sum(rest) / len(rest) if rest else 0.0)


def per_resource_score(remaining: Sequence[float], pair_norm: Callable[[int, int], float],
                       pair_ratios: Callable[[int, int], Sequence[float]], n_resources: int) -> float:
    """ISACPP's score: contention = 1 / factor + sum over resources of co-located over solo use.

    ``pair_ratios(i, k)``: job i's co-located over solo use of each predicted resource next to
    job k (``n_resources`` values, in the same order for every pair); with several co-runners the
    pairwise ratios multiply; a job alone uses what it uses solo (ratio 1).
    """
    def contention(i, active, factors):
        others = [pair_ratios(i, k) for k in active if k != i]
        if any(len(r) != n_resources for r in others):
            raise ValueError(f"pair_ratios: {[len(r) for r in others]} values for job {i}; expected {n_resources}")
        ratios = [math.prod(r) for r in zip(*others)] if others else [1.0] * n_resources
        return 1.0 / factors[i] + sum(ratios)

    _, stages = run_stages(remaining, pair_norm)
    return gpu_score(interference(remaining, stages, contention))


def two_resource_score(remaining: Sequence[float], pair_norm: Callable[[int, int], float],
                       solo_util: Sequence[float] | None = None) -> float:
    """coloc's adaptation: contention = 1 / factor, plus max(1, the stage's summed solo utilizations)
    when ``solo_util`` (each job's predicted solo utilization) is given."""
    def contention(i, active, factors):
        if solo_util is None:
            return 1.0 / factors[i]
        return 1.0 / factors[i] + max(1.0, sum(solo_util[k] for k in active))

    _, stages = run_stages(remaining, pair_norm)
    return gpu_score(interference(remaining, stages, contention))
