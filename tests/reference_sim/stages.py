"""REFERENCE copy of coloc.policies.stages (the stages of a co-located set, ISACPP's score on them), kept only for
the exactness test, so that a change of the production module's arithmetic shows as a different decision. See the
production module's docstring for what each function computes. Do not edit except to follow an intended change.
"""
from __future__ import annotations

import math
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


def throughput_contention(factor: float) -> float:
    """The ``throughput-scaled`` contention of a job of co-located factor ``factor``: memory 1, PCIe and
    utilization 1 / factor each (solo over co-located use, that use scaling with the job's throughput)."""
    return 1.0 + 2.0 / factor


def resource_contention(pair_ratios: Sequence[Sequence[float]]) -> float:
    """The ``per-resource`` contention: sum over resources of solo over co-located use, 1 / ratio, where
    ``pair_ratios`` holds the job's co-located over solo use of each resource next to each co-runner (one
    sequence per co-runner, every one of the same length); several co-runners multiply their ratios."""
    lengths = {len(r) for r in pair_ratios}
    if len(lengths) != 1 or not lengths.pop():
        raise ValueError(f"resource ratios of lengths {[len(r) for r in pair_ratios]}; expected one length >= 1 "
                         f"for every co-runner")
    return sum(1.0 / math.prod(r) for r in zip(*pair_ratios, strict=True))


def isacpp_interference(remaining: Sequence[float], pair_norm: Callable[[int, int], float],
                        contention: Callable[[int, tuple, dict], float]) -> list[float]:
    """Each job's interference (job 0 the new job), as the module docstring states.

    ``contention(i, active, factors)``: job i's contention in a stage of jobs ``active`` where it has
    co-located factor ``factors[i]``; called only for stages of two jobs or more (alone counts 0).
    """
    finish, stages = run_stages(remaining, pair_norm)
    out = [0.0] * len(remaining)
    for length, active, factors in stages:
        if len(active) < 2:
            continue  # the last job, alone: 0
        new_here = active[0] == 0  # (active keeps index order)
        for i in active:
            if i == 0 or new_here:  # a resident counts the stages it shares with the new job only
                out[i] += length / finish[i] * contention(i, active, factors)
    return out


def gpu_score(interferences: Sequence[float]) -> float:
    """The first (new) job's interference plus the mean of the others' (0 for a job alone)."""
    rest = interferences[1:]
    return interferences[0] + (sum(rest) / len(rest) if rest else 0.0)


def isacpp_score(remaining: Sequence[float], pair_norm: Callable[[int, int], float],
                 contention: Callable[[int, tuple, dict], float]) -> float:
    """ISACPP's score of a GPU whose jobs (the new one first) have these solo remaining times."""
    return gpu_score(isacpp_interference(remaining, pair_norm, contention))


def pair_score(t_new: float, t_old: float, n_new: float, n_old: float, c_new: float, c_old: float) -> float:
    """isacpp_score in closed form for a new job next to one resident: solo remaining times t_new, t_old,
    pair norms n_new, n_old, contentions when together c_new, c_old (> 0).

    With a = t_new / n_new and b = t_old / n_old (each one's time to its end while together): if the resident
    ends first (b < a), one shared stage of length b, the new job's finish time b + (t_new - n_new b), so the
    score is c_old + b / (b + t_new - n_new b) c_new; else the stage is a, the resident's finish
    a + (t_old - n_old a), and the score c_new + a / (a + t_old - n_old a) c_old.
    """
    a, b = t_new / n_new, t_old / n_old
    if b < a:
        return b / (b + (t_new - n_new * b)) * c_new + c_old
    return c_new + a / (a + (t_old - n_old * a)) * c_old
