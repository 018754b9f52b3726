"""policies.lone.best_lone_gpu finds exactly the (score, gpu) that scoring every GPU finds, ties included."""
import random

import pytest

from coloc.policies.lone import best_lone_gpu, direction
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


def isacpp_score(t_new, n_new, n_old, c_new, c_old, alone_new, alone_old):
    def score(t_old):
        stage = min(t_new / n_new, t_old / n_old)
        i_new = stage / t_new * c_new + (t_new - n_new * stage) / t_new * alone_new
        i_old = stage / t_old * c_old + (t_old - n_old * stage) / t_old * alone_old
        return i_new + i_old
    return score


@pytest.mark.parametrize("seed", range(40))
def test_isacpp_pair_search_equals_scoring_every_gpu(seed):
    random.seed(seed)
    now, speed = 1000.0 * seed, random.choice([0.5, 1.0, 2.3])
    pool = [random.uniform(1.0, 5000.0) for _ in range(8)]  # few distinct times: many exact ties
    times = [random.choice(pool) if random.random() < 0.5 else random.uniform(0.5, 6000.0) for _ in range(60)]
    placed_now = set(random.sample(range(60), 3))
    times[min(placed_now)] = random.choice([0.2, 9000.0])  # a GPU outside the order at either end
    group, residents = lone_group(times, speed, now, placed_now)
    group.by_finish(now - 10.0)  # ordered at an earlier time, as across rounds
    n_new, n_old = random.uniform(0.05, 1.0), random.uniform(0.05, 1.0)
    util = random.choice([0.0, 1.0, 1.4])
    c_new, c_old = 1 / n_new + util, 1 / n_old + util
    alone_new, alone_old = 1 + min(util, 1.0), 1 + min(util, 1.0)
    t_new = random.uniform(1.0, 4000.0)
    exact = isacpp_score(t_new, n_new, n_old, c_new, c_old, alone_new, alone_old)
    digits = seed % 3  # rounded scores stay monotone but tie across different times

    def score(t_old):
        return round(exact(t_old), digits) if digits else exact(t_old)

    def remaining(gpu):
        job = residents[gpu][0]
        return job.remaining_at(now) / job.speed

    found = best_lone_gpu(group, now, remaining, score, n_old * (t_new / n_new),
                          direction(c_new - n_new * alone_new), -direction(c_old - n_old * alone_old))
    assert found == min((score(remaining(gpu)), gpu) for gpu in range(60))


def test_a_flat_piece_is_scanned_whole_and_ties_go_to_the_lowest_gpu():
    random.seed(7)
    times = [300.0] * 20 + [random.uniform(400, 900) for _ in range(20)]
    group, residents = lone_group(times, 1.0, 0.0, set())
    noise = {gpu: random.choice([0.0, 1e-13, -1e-13]) for gpu in range(40)}

    def remaining(gpu):
        return residents[gpu][0].remaining_at(0.0)

    scores = {}

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
