"""policies.lone.best_lone_gpu finds exactly the (score, gpu) that scoring every GPU finds, ties included."""
import itertools
import random

import pytest

from coloc.policies.lone import best_lone_gpu, piece_floors
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

    def score(t_old):
        exact = pair_score(t_new, t_old, n_new, n_old, c_new, c_old)
        return round(exact, digits) if digits else exact

    def remaining(gpu):
        job = residents[gpu][0]
        return job.remaining_at(now) / job.speed

    assert c_new > 0 and c_old > 0
    ends = (c_old, c_new + c_old, c_new) if not digits else None
    return group, remaining, score, n_old * (t_new / n_new), ends, now


@pytest.mark.parametrize("seed", range(40))
def test_isacpp_pair_search_equals_scoring_every_gpu(seed):
    """ISACPP's pair score (stages.pair_score) rises with the resident's remaining time below the point where both
    would end together and falls above it (the proof: Isacpp._lone_pair); the search on that shape finds what
    scoring every GPU finds, ties included."""
    group, remaining, score, split, ends, now = isacpp_pair_case(seed)
    found = best_lone_gpu(group, now, remaining, score, split, floors=piece_floors(ends) if ends else None)
    assert found == min((score(remaining(gpu)), gpu) for gpu in range(60))


@pytest.mark.parametrize("seed", range(60))
def test_search_equals_scoring_every_gpu_with_a_best_from_elsewhere(seed):
    """best_lone_gpu, given no best, a best below the group, one above it or one tied with a GPU of it (its
    score, a lower or higher GPU number), finds the least (score, gpu) of them all, as scoring every GPU does."""
    group, remaining, score, split, ends, now = isacpp_pair_case(seed)
    every = sorted((score(remaining(gpu)), gpu) for gpu in range(60))
    tied = random.choice(every)
    best = [None, (every[0][0] * 0.99, 7), (every[-1][0] * 1.01, 7), (every[0][0], every[0][1] + 1),
            (tied[0], max(tied[1] - 1, 0)), (tied[0], 61)][seed % 6]
    floors = piece_floors(ends) if ends else None
    found = best_lone_gpu(group, now, remaining, score, split, best, floors)
    assert found == min(every + ([best] if best else []))


def test_a_group_bounded_above_the_best_has_none_of_its_gpus_scored():
    """With a best below the score at the group's least and greatest times (each widened by the rounding
    allowance), no GPU of the group is scored; with a best inside that range, the search finds the group's least."""
    random.seed(11)
    group, residents = lone_group([random.uniform(100.0, 900.0) for _ in range(30)], 1.0, 0.0, set())
    calls = []

    def score(t):
        calls.append(t)
        return pair_score(400.0, t, 0.7, 0.6, 3.0, 2.5)  # rises to t = 0.6 x 400 / 0.7, then falls

    def remaining(gpu):
        return residents[gpu][0].remaining_at(0.0)

    every = min((score(remaining(gpu)), gpu) for gpu in range(30))
    low, high = min(remaining(gpu) for gpu in range(30)), max(remaining(gpu) for gpu in range(30))
    floor = min(score(low), score(high))
    calls.clear()
    assert best_lone_gpu(group, 0.0, remaining, score, 0.6 * 400.0 / 0.7, (floor * 0.999, 99)) == (
        floor * 0.999, 99)
    assert len(calls) == 2  # the two ends of the group's times, no GPU
    assert best_lone_gpu(group, 0.0, remaining, score, 0.6 * 400.0 / 0.7, (floor * 1.001, 99)) == every


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
    assert all(b >= a - slack for a, b in itertools.pairwise(low))    # rises below the split
    assert all(b <= a + slack for a, b in itertools.pairwise(high))  # falls above it
    assert all(c_old - slack <= s <= c_old + c_new + slack for s in low)
    assert all(c_new - slack <= s <= c_old + c_new + slack for s in high)


def test_a_zero_contention_makes_a_flat_piece_scanned_whole_with_ties_to_the_lowest_gpu():
    """c_new = 0 and every resident ending first: the score is c_old at every GPU (a flat rising piece), all tie,
    and the lowest GPU wins, as scoring every GPU gives (the order by time is not the order by GPU)."""
    random.seed(7)
    group, residents = lone_group([300.0] * 20 + [random.uniform(1.0, 4000.0) for _ in range(30)], 1.0, 0.0, set())

    def remaining(gpu):
        return residents[gpu][0].remaining_at(0.0)

    def score(t):
        return pair_score(5000.0, t, 0.8, 0.8, 0.0, 2.5)

    order = [gpu for _, gpu in group.by_finish(0.0)]
    assert order[0] != 0 and {score(remaining(gpu)) for gpu in range(50)} == {2.5}
    assert best_lone_gpu(group, 0.0, remaining, score, 0.8 * 5000.0 / 0.8) == (2.5, 0)


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
    """Residents ending before and after the split, a best below the rising piece's floor but above the group's
    bound: the rising piece is not scanned (none of its GPUs' times is scored), the falling one is."""
    random.seed(3)
    group, residents = lone_group([random.uniform(1.0, 900.0) for _ in range(30)] + [5000.0], 1.0, 0.0, set())
    calls = []

    def score(t):
        calls.append(t)
        return pair_score(1000.0, t, 1.0, 1.0, 1.0, 5.0)  # 5 -> 6 up to t = 1000, then 6 -> 5

    def remaining(gpu):
        return residents[gpu][0].remaining_at(0.0)

    floors = piece_floors((5.0, 6.0, 1.0))
    rising = {remaining(gpu) for gpu in range(30)}
    assert best_lone_gpu(group, 0.0, remaining, score, 1000.0, (5.1, 99), (5.2, floors[1])) == (2.0, 30)
    assert 5000.0 in calls and not rising & set(calls)
    calls.clear()
    assert best_lone_gpu(group, 0.0, remaining, score, 1000.0, (5.1, 99), floors) == (2.0, 30)
    assert rising & set(calls)  # a floor below the best: the rising piece is scanned


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
