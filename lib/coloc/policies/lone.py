"""The best GPU among GPUs that each hold one job, without scoring them all.

For a new job next to one resident, ISACPP's score is a function of the resident's solo
remaining time t alone (the rest is fixed by the two job types and the new job), in two
pieces split where both jobs would end together (t = `split`): below, the resident ends
first; above, the new job does. Each piece is monotone in t (its direction known from the
job types' numbers; 0 when flat or unknown). A GpuGroup keeps its GPUs ordered by t
(coloc.sim.cluster.GpuGroup.by_finish), so the least score of a piece lies at one end: the
scan starts there and stops as soon as no GPU further on can score below the best so far,
allowing for rounding (in t and in the score). Ties go to the lowest GPU, and the scores are
the caller's own floating-point expression, so the choice is exactly that of scoring every
GPU. A flat piece (direction 0) is scanned whole.
"""
from __future__ import annotations

import bisect
from collections.abc import Callable

REL = 1e-10  # rounding allowance, relative: the order's times (in t) and the scores


def best_lone_gpu(group, now: float, remaining: Callable[[int], float], score: Callable[[float], float],
                  split: float, below: int, above: int) -> tuple[float, int] | None:
    """Least (score(remaining(gpu)), gpu) over `group` (a GpuGroup of one-job GPUs); None if empty.

    remaining(gpu): the resident's solo remaining time as the caller computes it; score(t): the
    caller's score for a resident with remaining time t; below / above: +1 if the score rises
    with t for t < split / t >= split, -1 if it falls, 0 if neither is known.
    """
    best = None
    order = group.by_finish(now)
    for gpu in group.unordered():
        option = (score(remaining(gpu)), gpu)
        best = option if best is None or option < best else best
    cut = bisect.bisect_left(order, (now + split, -1))
    for lo, hi, direction in ((0, cut, below), (cut, len(order), above)):
        indices = range(lo, hi) if direction >= 0 else range(hi - 1, lo - 1, -1)
        for i in indices:
            key, gpu = order[i]
            t = remaining(gpu)
            option = (score(t), gpu)
            best = option if best is None or option < best else best
            if direction:
                # GPUs further on have t beyond t -+ slack; the score is monotone there
                edge = t - direction * REL * (abs(key) + 1.0)
                if edge > 0:
                    bound = score(edge)
                    if bound - REL * (1.0 + abs(bound)) > best[0]:
                        break
    return best


def direction(slope: float) -> int:
    """+1, -1 or 0 (flat within rounding) from the sign of a piece's slope."""
    return 1 if slope > REL else -1 if slope < -REL else 0
