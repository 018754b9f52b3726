"""The best GPU among GPUs that each hold one job, without scoring them all.

For a new job next to one resident, ISACPP's score is a function of the resident's solo
remaining time t alone (the rest is fixed by the two job types and the new job), in two
pieces split where both jobs would end together (t = `split`): below, the resident ends
first; above, the new job does. Each piece is monotone in t (its direction known from the
job types' numbers; 0 when flat or unknown). ISACPP's published score rises on the first
and falls on the second (proof: coloc.policies.isacpp.Isacpp._lone_pair), never flat. A GpuGroup keeps its GPUs ordered by t
(coloc.sim.cluster.GpuGroup.by_finish), so the least score of a piece lies at one end: the
scan starts there and stops as soon as no GPU further on can score below the best so far,
allowing for rounding (in t and in the score). Ties go to the lowest GPU, and the scores are
the caller's own floating-point expression, so the choice is exactly that of scoring every
GPU. A flat piece (direction 0) is scored whole (as one array when long: its scores differ only
by rounding, so any GPU of it may win). Given the score's values at the ends of the pieces, a
piece whose least end is above the best option found so far (in this group or another) is
passed over whole.

For the published score's shape (rises, then falls) best_rise_fall_gpu makes the same choice
with fewer steps: the least score over any set of times lies at its least or greatest time, so
a group whose score at its order's two extreme times (widened by the rounding allowance) is above
the best found elsewhere is passed over after two evaluations, whatever its size.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable

import numpy as np

from coloc.sim.cluster import solo_times_of

REL = 1e-10  # rounding allowance, relative: the order's times (in t) and the scores
VECTOR_MIN = 16  # a flat piece of at least this many GPUs is scored as one array


def piece_floors(ends: tuple[float, float, float]) -> tuple[float, float]:
    """From the score's values as t -> 0, at t = split and as t -> infinity: for each piece, a number such that
    a best option below it means no GPU of the piece can beat it (its least end less the rounding allowance)."""
    return tuple(floor - REL * (1.0 + abs(floor)) for floor in (min(ends[0], ends[1]), min(ends[1], ends[2])))


def best_lone_gpu(group, now: float, remaining: Callable[[int], float], score: Callable[[float], float],
                  split: float, below: int, above: int, ends: tuple[float, float, float] | None = None,
                  best: tuple[float, int] | None = None, floors: tuple[float, float] | None = None,
                  score_array: Callable | None = None, flat: list | None = None,
                  flat_key=None) -> tuple[float, int] | None:
    """Least (score(remaining(gpu)), gpu) over `group` (a GpuGroup of one-job GPUs) and `best`; None if both empty.

    remaining(gpu): the resident's solo remaining time as the caller computes it (for GPUs not yet in
    the order; the order's come from the group, computed the same way); score(t): the caller's score
    for a resident with remaining time t, a number (and, unless `score_array` is given, an array of them:
    score_array(ts) scores an array, element-wise the same operations); below / above: +1 if the score rises
    with t for t < split / t >= split, -1 if it falls, 0 if neither is known. ends: the score's
    values (exact arithmetic) as t -> 0, at t = split and as t -> infinity, when known (or their
    piece_floors, `floors`): a piece whose least end is above `best` (the least option found elsewhere)
    is passed over whole. flat: where given, long flat pieces are not scored but set aside there as
    (flat_key, score_array, floor or None, group, lo, hi), for least_of_flat_pieces to score with the others
    of the same key (the caller's promise: one key, one score function).
    """
    order = group.by_finish(now)
    pending = group.unordered()
    if pending:
        for gpu in pending:
            option = (score(remaining(gpu)), gpu)
            if best is None or option < best:
                best = option
    size = len(order)
    if not size:
        return best
    if floors is None and ends is not None:
        floors = piece_floors(ends)
    cut = bisect_left(order, (now + split, -1))
    if cut and (best is None or floors is None or not floors[0] > best[0]):
        best = _least_of_piece(group, order, 0, cut, below, now, score, score_array, best, flat, flat_key,
                               floors and floors[0])
    if cut < size and (best is None or floors is None or not floors[1] > best[0]):
        best = _least_of_piece(group, order, cut, size, above, now, score, score_array, best, flat, flat_key,
                               floors and floors[1])
    return best


def best_rise_fall_gpu(group, now: float, remaining: Callable[[int], float], score: Callable[[float], float],
                       split: float, best: tuple[float, int] | None = None,
                       floors: tuple[float, float] | None = None) -> tuple[float, int] | None:
    """best_lone_gpu for a score that rises with t below `split` and falls above it (below +1, above -1), the
    shape of ISACPP's published score: the same choice, ties included, found with fewer steps.

    Such a score's least over any times lies at the least or the greatest of them. So when `best` is known,
    the group's ordered GPUs are first bounded as a whole: their times lie between the first GPU's less the
    order's rounding allowance and the last GPU's plus it, and if the score at both of those ends, less the
    score's allowance, is above the best, no GPU of the order can reach it (none is scored). Otherwise the two
    pieces are scanned from their low ends, as best_lone_gpu does, the piece boundary found by walking the
    order's keys from either end (a scan stops within a few GPUs of its end) rather than by bisection.
    """
    order = group.by_finish(now)
    for gpu in group.unordered():
        option = (score(remaining(gpu)), gpu)
        if best is None or option < best:
            best = option
    size = len(order)
    if not size:
        return best
    remaining_work, rate, last_update, speed = group.progress()
    if best is not None:
        low = (remaining_work[0] - rate[0] * (now - last_update[0])) / speed[0] - REL * (abs(order[0][0]) + 1.0)
        if low > 0:
            last = size - 1
            high = (remaining_work[last] - rate[last] * (now - last_update[last])) / speed[last] \
                + REL * (abs(order[last][0]) + 1.0)
            bound = min(score(low), score(high))
            if bound - REL * (1.0 + abs(bound)) > best[0]:
                return best
    end = now + split  # the pieces: keys below end, keys from end on
    if order[0][0] < end and (best is None or floors is None or not floors[0] > best[0]):
        for i in range(size):  # the rising piece, upward
            key, gpu = order[i]
            if not key < end:
                break
            t = (remaining_work[i] - rate[i] * (now - last_update[i])) / speed[i]  # GpuGroup.solo_time(i, now)
            option = (score(t), gpu)
            if best is None or option < best:
                best = option
            else:
                edge = t - REL * (abs(key) + 1.0)
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
                edge = t + REL * (abs(key) + 1.0)
                if edge > 0:
                    bound = score(edge)
                    if bound - REL * (1.0 + abs(bound)) > best[0]:
                        break
    return best


def least_of_flat_pieces(flat: list, now: float, best):
    """Least (score, gpu) of the flat pieces best_lone_gpu set aside and `best`: pieces whose floor is above
    the best are passed over, the rest scored as one array per key."""
    by_key: dict = {}
    for key, score_array, floor, group, lo, hi in flat:
        if best is None or floor is None or not floor > best[0]:
            by_key.setdefault(key, (score_array, []))[1].append((group, lo, hi))
    for score_array, pieces in by_key.values():
        group, lo, hi = pieces[0]
        best = _least_of_flat_piece(group, lo, hi, now, score_array, best, pieces[1:])
    return best


def _least_of_piece(group, order, lo: int, hi: int, direction: int, now: float, score, score_array, best,
                    flat, flat_key, floor):
    """Least (score, gpu) of order[lo:hi] and `best`, scanned from the piece's low end while GPUs further on
    may score lower (direction +-1), or scored whole (direction 0; as one array when long, or set aside in
    `flat` where given)."""
    if direction == 0 and hi - lo >= VECTOR_MIN:
        if flat is None:
            return _least_of_flat_piece(group, lo, hi, now, score_array or score, best)
        flat.append((flat_key, score_array or score, floor, group, lo, hi))
        return best
    remaining, rate, last_update, speed = group.progress()
    for i in range(lo, hi) if direction >= 0 else range(hi - 1, lo - 1, -1):
        t = (remaining[i] - rate[i] * (now - last_update[i])) / speed[i]  # GpuGroup.solo_time(i, now)
        key, gpu = order[i]
        option = (score(t), gpu)
        if best is None or option < best:
            best = option  # GPUs further on score no lower than this one, to within rounding: look at the next
        elif direction:
            # GPUs further on have t beyond t -+ slack; the score is monotone there
            edge = t - direction * REL * (abs(key) + 1.0)
            if edge > 0:
                bound = score(edge)
                if bound - REL * (1.0 + abs(bound)) > best[0]:
                    break
    return best


def _least_of_flat_piece(group, lo: int, hi: int, now: float, score, best, more: list = ()):
    """Least (score, gpu) of order[lo:hi] and `best`, scoring the piece's GPUs as one array (with those of the
    pieces `more`, (group, lo, hi) each, of the same score).

    On a flat piece the scores differ only by rounding, so every GPU is scored; `score` applied to an
    array does the scalar's floating-point operations element-wise, so the values are the scalar's.
    A group's two pieces (adjacent in its order) are taken as one slice, and the pieces' kept progress
    is put together before the solo times are computed: one array operation each, whatever the pieces.
    """
    pieces = _joined([(group, lo, hi), *more]) if more else [(group, lo, hi)]
    if len(pieces) == 1:
        group, lo, hi = pieces[0]
        times, gpus = group.solo_times(lo, hi, now), group.gpus_at(lo, hi)
    else:
        parts = [(g.arrays(), a, b) for g, a, b in pieces]
        remaining, rate, last_update, speed, gpus = (
            np.concatenate([arrays[k][a:b] for arrays, a, b in parts]) for k in range(5))
        times = solo_times_of(remaining, rate, last_update, speed, now)
    scores = score(times)
    least = scores.min()
    gpu = int(gpus[scores == least].min())
    option = (float(least), gpu)
    return option if best is None or option < best else best


def _joined(pieces: list) -> list:
    """(group, lo, hi) pieces with a group's adjacent pieces (its two pieces, one after the other) made one."""
    joined = [pieces[0]]
    for group, lo, hi in pieces[1:]:
        last_group, last_lo, last_hi = joined[-1]
        if group is last_group and lo == last_hi:
            joined[-1] = (group, last_lo, hi)
        else:
            joined.append((group, lo, hi))
    return joined


def direction(slope: float) -> int:
    """+1, -1 or 0 (flat within rounding) from the sign of a piece's slope."""
    return 1 if slope > REL else -1 if slope < -REL else 0
