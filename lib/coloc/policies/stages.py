"""Stages of a set of co-located jobs: each stage ends when the first job finishes.

Used by ISACPP's multi-stage interference score and by coloc's JCT-aware
packing. `remaining[i]` is job i's solo remaining time on the device;
`pair_norm(i, k)` its normalized throughput next to job k; more than two jobs
multiply their pairwise values (the simulator's extrapolation).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence


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
