"""The best GPU among GPUs that each hold one job, without scoring them all (ISACPP's pair score).

For a new job next to one resident, ISACPP's score is a function of the resident's solo
remaining time t alone (the rest is fixed by the two job types and the new job), in two
pieces split where both jobs would end together (t = `split`): below, the resident ends
first and the score rises with t; above, the new job does and the score falls (proof:
coloc.policies.isacpp.Isacpp._lone_pair; strictly where the contentions are positive, as the
published ones are). A GpuGroup keeps its GPUs ordered by t (coloc.sim.cluster.GpuGroup.by_finish).

* The least score over any set of times lies at its least or its greatest time. So once a best
  option is known (in another group), a group is bounded as a whole by the score at its order's
  first and last times, each widened by the order's rounding allowance: above the best, the group
  is passed over after those two evaluations, whatever its size.
* Otherwise each piece is scanned from its low end (the rising piece upward from the least t, the
  falling piece downward from the greatest) and the scan stops as soon as no GPU further on can
  score below the best so far, allowing for rounding (in t and in the score). A piece whose
  least end value (`piece_floors`) is above the best is passed over whole.

Ties go to the lowest GPU, and the scores are the caller's own floating-point expression, so the
choice is exactly that of scoring every GPU (tests/reference_sim/isacpp.py). A zero contention
makes a piece flat: still correct (its ties are all scanned), only slower.
"""
from __future__ import annotations

from collections.abc import Callable

REL = 1e-10  # rounding allowance, relative: the order's times (in t) and the scores


def piece_floors(ends: tuple[float, float, float]) -> tuple[float, float]:
    """From the score's values as t -> 0, at t = split and as t -> infinity: for each piece, a number such that
    a best option below it means no GPU of the piece can beat it (its least end less the rounding allowance)."""
    return tuple(floor - REL * (1.0 + abs(floor)) for floor in (min(ends[0], ends[1]), min(ends[1], ends[2])))


def best_lone_gpu(group, now: float, remaining: Callable[[int], float], score: Callable[[float], float],
                  split: float, best: tuple[float, int] | None = None,
                  floors: tuple[float, float] | None = None) -> tuple[float, int] | None:
    """Least (score(t), gpu) over `group` (a GpuGroup of one-job GPUs, t each resident's solo remaining time at
    `now`) and `best` (the least option found elsewhere, or None); None if both are empty.

    score(t) rises with t below `split` and falls above it (in exact arithmetic); remaining(gpu): the
    resident's solo remaining time as the caller computes it, for GPUs not yet in the group's order (the
    order's come from the progress the group keeps, computed the same way); floors: piece_floors of the
    score's ends, when known.
    """
    order = group.by_finish(now)
    for gpu in group.unordered():  # placed in this round, or a co-runner left: scored one by one
        option = (score(remaining(gpu)), gpu)
        if best is None or option < best:
            best = option
    size = len(order)
    if not size:
        return best
    remaining_work, rate, last_update, speed = group.progress()  # solo time: as GpuGroup.solo_time(i, now)
    if best is not None and _above(order, remaining_work, rate, last_update, speed, now, score, best[0]):
        return best
    end = now + split  # the pieces: keys below end (rising), keys from end on (falling)
    if order[0][0] < end and (best is None or floors is None or not floors[0] > best[0]):
        for i in range(size):  # the rising piece, upward
            key, gpu = order[i]
            if not key < end:
                break
            t = (remaining_work[i] - rate[i] * (now - last_update[i])) / speed[i]
            option = (score(t), gpu)
            if best is None or option < best:
                best = option  # GPUs further on score no lower than this one, to within rounding: look at the next
            else:
                edge = t - REL * (abs(key) + 1.0)  # GPUs further on have t beyond this
                if edge > 0:
                    bound = score(edge)
                    if bound - REL * (1.0 + abs(bound)) > best[0]:
                        break
    if not order[-1][0] < end and (best is None or floors is None or not floors[1] > best[0]):
        for i in range(size - 1, -1, -1):  # the falling piece, downward
            key, gpu = order[i]
            if key < end:
                break
            t = (remaining_work[i] - rate[i] * (now - last_update[i])) / speed[i]
            option = (score(t), gpu)
            if best is None or option < best:
                best = option
            else:
                edge = t + REL * (abs(key) + 1.0)  # GPUs further on have t below this
                if edge > 0:
                    bound = score(edge)
                    if bound - REL * (1.0 + abs(bound)) > best[0]:
                        break
    return best


def _above(order, remaining_work, rate, last_update, speed, now: float, score, best: float) -> bool:
    """Whether every GPU of the order scores above `best`: the score at the first GPU's time less the order's
    rounding allowance and at the last GPU's plus it, the least of the two less the score's allowance, is above
    it (the score's least over the times between lies at one of them). False where the least time so widened is
    not positive (the score's shape is proven for t > 0)."""
    low = (remaining_work[0] - rate[0] * (now - last_update[0])) / speed[0] - REL * (abs(order[0][0]) + 1.0)
    if not low > 0:
        return False
    last = len(order) - 1
    high = (remaining_work[last] - rate[last] * (now - last_update[last])) / speed[last] + REL * (
        abs(order[last][0]) + 1.0)
    bound = min(score(low), score(high))
    return bound - REL * (1.0 + abs(bound)) > best
