"""Stages of a set of co-located jobs: each stage ends when the first job finishes; ISACPP's score on them.

Used by ISACPP's multi-stage interference score and by coloc's JCT-aware packing. `remaining[i]` is
job i's solo remaining time on the device; `pair_norm(i, k)` its normalized throughput next to job k;
more than two jobs multiply their pairwise values (the simulator's extrapolation).

ISACPP's score, as its authors built it (self-cream/ISACPP, scheduler/ISACPP/server.py, `inference`):

* Stages: the new job (index 0) and the residents run together until the first ends; the rest go on
  without it, and so on, until one job is left, which runs alone to its end.
* Contention of job i in a stage where it shares the GPU: the sum over resources of its *solo* use over
  its predicted *co-located* use in that stage (``end_task_solo_resource_consumption_tensor /
  end_task_pred_resource``, summed over GPU memory, PCIe bandwidth and GPU utilization). No time term.
  The stage where a job runs alone counts 0 (the reference appends contention '0.0' and a co-location
  period of 0 for the last job).
* Weight of a stage for job i: its length over job i's predicted *co-located* remaining time, i.e. its
  predicted finish time from now (``remaining execution time``: the stages it shares plus its run alone,
  if it is the last).
* The new job's interference: the sum over its stages of weight x contention. A resident's: the same sum
  over the stages until the first of it and the new job ends (the stages it shares with the new job).
* The GPU's score: the new job's interference plus the mean of the residents'. An idle GPU scores exactly
  0 (``all_gpus_graph_interference[index] = 0.0``), and so does a job alone (its only stage is alone).

Two forms of contention (``SCORE_FORMS``; the run summary's ``isacpp_score_form`` says which ran):

* ``per-resource`` (the paper's), where the predictions carry per-resource co-located over solo use
  (``Predictions.resource_ratios``): contention = sum over those resources of 1 / ratio, a job's ratio
  next to several co-runners being the product of its pairwise ratios (as norms are);
* ``throughput-scaled`` (coloc's adaptation to Gavel's data, which measured throughput only): of
  ISACPP's three resources, the two that a training step drives (PCIe bandwidth, GPU utilization) are
  taken to be used in proportion to the job's throughput, so co-located use = solo use x the job's
  factor f (its product of pair norms) and solo / co-located = 1 / f; GPU memory is held the same
  (the model and activations do not shrink), 1. Contention = 1 + 2 / f.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

SCORE_FORMS = ("per-resource", "throughput-scaled")


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
