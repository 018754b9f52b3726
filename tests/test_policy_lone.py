"""policies.lone.best_lone_gpu finds exactly the (score, gpu) that scoring every GPU finds, ties included."""
import random

import numpy as np
import pytest

from coloc.policies.lone import best_lone_gpu, best_rise_fall_gpu, direction, least_of_flat_pieces, piece_floors
from coloc.policies.stages import pair_score, resource_contention, throughput_contention
from coloc.sim.cluster import GpuGroup
from coloc.sim.job import RUNNING, Job


def lone_group(times: list[float], speed: float, now: float, placed_now: set[int]):
    """A GpuGroup of one-job GPUs whose residents have solo remaining times `times` at `now`."""
    residents = []
    for gpu, t in enumerate(times):
        job = Job(gpu, 0.0, 1.0, 1, "w")
        job.state, job.speed, job.last_update = RUNNING, speed, now - 50.0
        job.rate = 0.0 if gpu in placed_now else speed  # placed in this round: no rate yet
        job.remaining = t * speed + (job.rate * 50.0)
        residents.append([job])
    group = GpuGroup(residents)
    for gpu in random.sample(range(len(times)), len(times)):
        group.add(gpu)
    return group, residents


def elementwise(scalar):
    """A score that takes a number or an array, as best_lone_gpu's contract asks (arrays: the scalar per element)."""
    def score(t):
        return np.array([scalar(float(x)) for x in t]) if isinstance(t, np.ndarray) else scalar(t)
    return score


def isacpp_pair_case(seed: int):
    """A group of 60 one-job GPUs (3 outside the order, many exact ties) at `now`, and ISACPP's pair score of a new
    job next to each, over norms below and above 1 and contentions of either form (rounded on 2 seeds in 3: the
    scores stay monotone but tie across different times): (group, remaining, score, split, ends, now)."""
    random.seed(seed)
    now, speed = 1000.0 * seed, random.choice([0.5, 1.0, 2.3])
    pool = [random.uniform(1.0, 5000.0) for _ in range(8)]  # few distinct times: many exact ties
    times = [random.choice(pool) if random.random() < 0.5 else random.uniform(0.5, 6000.0) for _ in range(60)]
    placed_now = set(random.sample(range(60), 3))
    times[min(placed_now)] = random.choice([0.2, 9000.0])  # a GPU outside the order at either end
    group, residents = lone_group(times, speed, now, placed_now)
    group.by_finish(now - 10.0)  # ordered at an earlier time, as across rounds
    n_new, n_old = random.uniform(0.05, 1.2), random.uniform(0.05, 1.2)
    if seed % 2:
        c_new, c_old = throughput_contention(n_new), throughput_contention(n_old)
    else:
        c_new, c_old = (resource_contention([tuple(random.uniform(0.2, 2.0) for _ in range(3))]) for _ in "ab")
    t_new = random.uniform(1.0, 4000.0)
    digits = seed % 3

    @elementwise
    def score(t_old):
        exact = pair_score(t_new, t_old, n_new, n_old, c_new, c_old)
        return round(exact, digits) if digits else exact

    def remaining(gpu):
        job = residents[gpu][0]
        return job.remaining_at(now) / job.speed

    assert direction(c_new) == 1 and -direction(c_old) == -1
    ends = (c_old, c_new + c_old, c_new) if not digits else None
    return group, remaining, score, n_old * (t_new / n_new), ends, now


@pytest.mark.parametrize("seed", range(40))
def test_isacpp_pair_search_equals_scoring_every_gpu(seed):
    """ISACPP's pair score (stages.pair_score) rises with the resident's remaining time below the point where both
    would end together and falls above it (the proof: Isacpp._lone_pair); the search on those directions finds what
    scoring every GPU finds, ties included."""
    group, remaining, score, split, ends, now = isacpp_pair_case(seed)
    found = best_lone_gpu(group, now, remaining, score, split, 1, -1, ends)
    assert found == min((score(remaining(gpu)), gpu) for gpu in range(60))


@pytest.mark.parametrize("seed", range(60))
def test_rise_fall_search_equals_scoring_every_gpu_with_a_best_from_elsewhere(seed):
    """best_rise_fall_gpu, given no best, a best below the group, one above it or one tied with a GPU of it (its
    score, a lower or higher GPU number), finds the least (score, gpu) of them all, as scoring every GPU does."""
    group, remaining, score, split, ends, now = isacpp_pair_case(seed)
    every = sorted((score(remaining(gpu)), gpu) for gpu in range(60))
    tied = random.choice(every)
    best = [None, (every[0][0] * 0.99, 7), (every[-1][0] * 1.01, 7), (every[0][0], every[0][1] + 1),
            (tied[0], max(tied[1] - 1, 0)), (tied[0], 61)][seed % 6]
    floors = piece_floors(ends) if ends else None
    found = best_rise_fall_gpu(group, now, remaining, score, split, best, floors)
    assert found == min(every + ([best] if best else []))


def test_rise_fall_search_scores_no_gpu_of_a_group_bounded_above_the_best():
    """With a best below the score at the group's least and greatest times (each widened by the rounding
    allowance), no GPU of the group is scored; with a best inside that range, the search finds the group's least."""
    random.seed(11)
    group, residents = lone_group([random.uniform(100.0, 900.0) for _ in range(30)], 1.0, 0.0, set())
    calls = []

    @elementwise
    def score(t):
        calls.append(t)
        return pair_score(400.0, t, 0.7, 0.6, 3.0, 2.5)  # rises to t = 0.6 x 400 / 0.7, then falls

    def remaining(gpu):
        return residents[gpu][0].remaining_at(0.0)

    every = min((score(remaining(gpu)), gpu) for gpu in range(30))
    low, high = min(remaining(gpu) for gpu in range(30)), max(remaining(gpu) for gpu in range(30))
    floor = min(score(low), score(high))
    calls.clear()
    assert best_rise_fall_gpu(group, 0.0, remaining, score, 0.6 * 400.0 / 0.7, (floor * 0.999, 99)) == (
        floor * 0.999, 99)
    assert len(calls) == 2  # the two ends of the group's times, no GPU
    assert best_rise_fall_gpu(group, 0.0, remaining, score, 0.6 * 400.0 / 0.7, (floor * 1.001, 99)) == every


@pytest.mark.parametrize("seed", range(20))
def test_isacpp_pair_score_is_monotone_on_each_piece_and_bounded_by_its_ends(seed):
    random.seed(100 + seed)
    n_new, n_old = random.uniform(0.05, 1.5), random.uniform(0.05, 1.5)
    c_new, c_old = random.uniform(0.1, 20.0), random.uniform(0.1, 20.0)
    t_new = random.uniform(1.0, 1000.0)
    split = n_old * t_new / n_new
    below = sorted(random.uniform(0.0, split) for _ in range(200))[1:]
    above = sorted(random.uniform(split, 50 * split) for _ in range(200))
    low = [pair_score(t_new, t, n_new, n_old, c_new, c_old) for t in below]
    high = [pair_score(t_new, t, n_new, n_old, c_new, c_old) for t in above]
    slack = 1e-9 * (c_new + c_old)
    assert all(b >= a - slack for a, b in zip(low, low[1:]))    # rises below the split
    assert all(b <= a + slack for a, b in zip(high, high[1:]))  # falls above it
    assert all(c_old - slack <= s <= c_old + c_new + slack for s in low)
    assert all(c_new - slack <= s <= c_old + c_new + slack for s in high)


def test_a_flat_piece_is_scanned_whole_and_ties_go_to_the_lowest_gpu():
    random.seed(7)
    times = [300.0] * 20 + [random.uniform(400, 900) for _ in range(20)]
    group, residents = lone_group(times, 1.0, 0.0, set())
    noise = {gpu: random.choice([0.0, 1e-13, -1e-13]) for gpu in range(40)}

    def remaining(gpu):
        return residents[gpu][0].remaining_at(0.0)

    scores = {}

    @elementwise
    def score(t):
        return 5.0 + scores.get(t, 0.0)

    for gpu in range(40):
        scores[remaining(gpu)] = scores.get(remaining(gpu), noise[gpu])
    expected = min((score(remaining(gpu)), gpu) for gpu in range(40))
    assert best_lone_gpu(group, 0.0, remaining, score, 0.0, 0, 0) == expected


def test_group_keeps_gpu_order_and_forgets_removed_gpus():
    group, _ = lone_group([5.0, 1.0, 3.0, 2.0], 1.0, 0.0, set())
    assert list(group) == [0, 1, 2, 3] and group.first() == 0
    assert [gpu for _, gpu in group.by_finish(0.0)] == [1, 3, 2, 0]
    group.discard(1)
    group.discard(0)
    group.discard(9)  # not in the group: no error
    assert list(group) == [2, 3] and group.first() == 2 and 1 not in group and 2 in group
    assert [gpu for _, gpu in group.by_finish(0.0)] == [3, 2]


def test_a_piece_whose_ends_are_above_the_best_found_elsewhere_is_passed_over():
    random.seed(3)
    group, residents = lone_group([random.uniform(1.0, 900.0) for _ in range(30)], 1.0, 0.0, set())
    calls = []

    @elementwise
    def score(t):
        calls.append(t)
        return 5.0 + t / 1000.0  # rises with t: between 5.0 (t -> 0) and 6.0 (t = 1000)

    def remaining(gpu):
        return residents[gpu][0].remaining_at(0.0)

    ends = (5.0, 6.0, 6.0)
    assert best_lone_gpu(group, 0.0, remaining, score, 1000.0, 1, 0, ends, best=(4.9, 99)) == (4.9, 99)
    assert calls == []
    every = min((score(remaining(gpu)), gpu) for gpu in range(30))
    assert best_lone_gpu(group, 0.0, remaining, score, 1000.0, 1, 0, ends, best=(5.5, 99)) == every


def test_kept_progress_gives_the_residents_solo_times_bit_for_bit_and_goes_stale_loudly():
    random.seed(5)
    times = [random.uniform(0.1, 1e6) for _ in range(50)]
    group, residents = lone_group(times, 0.37, 12345.678, set())
    order = group.by_finish(12345.678)
    later = 98765.4321
    expected = [residents[gpu][0].remaining_at(later) / residents[gpu][0].speed for _, gpu in order]
    assert [group.solo_time(i, later) for i in range(50)] == expected
    assert group.solo_times(0, 50, later).tolist() == expected
    assert group.solo_times(10, 20, later).tolist() == expected[10:20]
    group.check()
    residents[order[7][1]][0].remaining += 1.0  # progress changed behind the group's back
    with pytest.raises(Exception, match="stale"):
        group.check()




@pytest.mark.parametrize("seed", range(10))
def test_flat_pieces_set_aside_and_scored_together_find_what_scoring_every_gpu_finds(seed):
    """Three groups of one cluster searched with their long flat pieces set aside, then scored as one array:
    the least (score, gpu) over every GPU of every group, ties (by rounding, and exact) to the lowest GPU."""
    random.seed(seed)
    now = 500.0
    times = [random.choice([50.0, 120.0, 280.0, 400.0, random.uniform(1.0, 900.0)]) for _ in range(120)]
    _, residents = lone_group(times, 1.0, now, set(random.sample(range(120), 6)))
    groups = [GpuGroup(residents) for _ in range(3)]
    for gpu in random.sample(range(120), 120):
        groups[gpu % 3].add(gpu)

    def remaining(gpu):
        return residents[gpu][0].remaining_at(now) / residents[gpu][0].speed

    noise = {remaining(gpu): random.choice([0.0, 1e-13, -1e-13, -2e-13]) for gpu in range(120)}

    @elementwise
    def score(t):  # flat up to rounding: 5 and a few units in the last place, the least anywhere
        return 5.0 + noise.get(t, 0.0)

    flat, best = [], None
    for group in groups:
        best = best_lone_gpu(group, now, remaining, score, 300.0, 0, 0, best=best, flat=flat, flat_key="one",
                             floors=piece_floors((5.0, 5.0, 5.0)))
    assert len(flat) >= 3 and all(hi - lo >= 16 for *_, lo, hi in flat)
    assert least_of_flat_pieces(flat, now, best) == min((score(remaining(gpu)), gpu) for gpu in range(120))
