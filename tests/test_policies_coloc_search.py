"""coloc's search of a group of one-job GPUs (JctPack._cheapest_lone, lone_floor, RoundWaits) finds
exactly what costing every GPU finds, ties and rounding included."""
import math
import random
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sim_cases import ABC, kept_ends, predictions, trace, truth_abc
from test_sim_exactness import perturbed

import coloc.policies.coloc as coloc_module
from coloc import policies
from coloc.policies.coloc import Coloc
from coloc.policies.coloc_search import below, lone_floor, solo_left
from coloc.policies.ends import PredictedEnds
from coloc.policies.stages import pair_finish_times
from coloc.sim import ClusterSpec, GroundTruth, Simulator, traces
from coloc.sim.cluster import GpuGroup
from coloc.sim.job import RUNNING, Job


def lone_group(times: list[float], speed, now: float, placed_now: set[int], shared_now: set[int]):
    """A GpuGroup of one-job GPUs whose residents have solo remaining times `times` at `now` (speed: one, or one
    per GPU), ordered at an earlier time; `placed_now`: residents placed in this round (no rate yet), `shared_now`: residents whose
    co-runner left in this round (still at the shared rate and marked co-located)."""
    residents = []
    for gpu, t in enumerate(times):
        job = Job(gpu, 0.0, 1.0, 1, "w")
        job.state, job.speed, job.last_update = RUNNING, speed[gpu] if isinstance(speed, list) else speed, now - 50.0
        job.rate = 0.0 if gpu in placed_now else job.speed * (0.6 if gpu in shared_now else 1.0)
        job.colocated = gpu in shared_now
        job.remaining = t * job.speed + job.rate * 50.0
        residents.append([job])
    group = GpuGroup(residents)
    for gpu in random.sample(range(len(times)), len(times)):
        if gpu not in placed_now | shared_now:
            group.add(gpu)
    group.by_finish(now - 10.0)  # ordered at an earlier time, as across rounds
    for gpu in placed_now | shared_now:
        group.add(gpu)  # joined in this round
    return group, residents


def cost_of_every_gpu(group, residents, now, t_new, n_new, n_old):
    """The plain loop: (added time, gpu) of every GPU, costed from its resident."""
    options = []
    for gpu in group:
        t_old = solo_left(residents[gpu][0], now)
        f_new, f_old = pair_finish_times(t_new, t_old, n_new, n_old)
        options.append((f_new + f_old - t_new - t_old, gpu))
    return options


def random_case(seed: int):
    random.seed(seed)
    now = random.choice([0.0, 1000.0 * seed, 3.7e6 + seed])
    pool = [random.uniform(1.0, 5000.0) for _ in range(6)]  # few distinct times: many exact ties
    if seed % 2:  # times that differ by rounding, progress kept at other speeds: the order and the times disagree
        speed = [random.choice([0.37, 1.0, 2.3, 0.9]) for _ in range(60)]
        times = [pool[0] * (1.0 + random.randint(-4, 4) * 2.2e-16) for _ in range(60)]
    else:
        speed = random.choice([0.5, 1.0, 2.3])
        times = [random.choice(pool) if random.random() < 0.5 else random.uniform(0.0, 2e5) for _ in range(60)]
    placed_now, shared_now = set(random.sample(range(60), 2)), set(random.sample(range(60), 2))
    shared_now -= placed_now
    times[min(placed_now)] = random.choice([0.2, 9e5])  # a GPU outside the order at either end
    group, residents = lone_group(times, speed, now, placed_now, shared_now)
    n_new, n_old = random.choice([(1.0, 1.0), (1.0, 1.0 - 1e-12), (random.uniform(0.01, 1.0), random.uniform(0.01, 1.0)),
                                  (0.97, 0.99), (0.3, 1.0)])
    t_new = random.choice([random.uniform(1.0, 4000.0), random.choice(pool), 2e5])
    return now, group, residents, t_new, n_new, n_old


@pytest.mark.parametrize("seed", range(60))
def test_a_group_of_one_job_gpus_is_searched_as_costing_every_gpu(seed):
    now, group, residents, t_new, n_new, n_old = random_case(seed)
    view = SimpleNamespace(now=now, cluster=SimpleNamespace(residents=residents))
    every = cost_of_every_gpu(group, residents, now, t_new, n_new, n_old)
    least = min(every)
    for beat in (None, least, (least[0], least[1] + 1), (least[0] + 1e-9, 0), sorted(every)[3], (-1.0, 0)):
        found = Coloc()._cheapest_lone(view, t_new, (n_new, n_old), group, beat)
        assert found == below(least, beat), (beat, found, least)


@pytest.mark.parametrize("seed", range(60))
def test_a_groups_floor_is_below_every_gpus_added_time(seed):
    now, group, residents, t_new, n_new, n_old = random_case(seed)
    policy = Coloc()
    policy._cache, policy._preds = {}, SimpleNamespace(norm=lambda d, a, b: n_new if a == "new" else n_old,
                                                       std=lambda d, a, b: 0.0)
    policy._cap = 2
    view = SimpleNamespace(can_share=lambda device, members: True, spec=SimpleNamespace(share_multi_gpu=False))
    rule = policy._joins(view, "v100", "new", ("old",))
    assert rule.lone == (n_new, n_old)
    floor = lone_floor(now, t_new, rule, group, residents)
    least = min(cost_of_every_gpu(group, residents, now, t_new, n_new, n_old))[0]
    assert least - 1e-6 * (1.0 + t_new / n_new + 1e6 / n_old) < floor <= least


@pytest.mark.parametrize("seed", range(20))
def test_the_floor_of_a_group_whose_gpus_are_all_ordered_is_below_every_gpus_added_time(seed):
    """lone_floor reads no resident where every GPU is in the kept order (the usual case): the floor from the
    order's first and last alone is still below every GPU's added time, by at most the rounding allowance."""
    now, group, residents, t_new, n_new, n_old = random_case(seed)
    group, residents = lone_group([solo_left(job, now) for job, in residents], 1.0, now, set(), set())
    assert not group.unordered()
    policy = Coloc()
    policy._cache, policy._preds = {}, SimpleNamespace(norm=lambda d, a, b: n_new if a == "new" else n_old,
                                                       std=lambda d, a, b: 0.0)
    policy._cap = 2
    view = SimpleNamespace(can_share=lambda device, members: True, spec=SimpleNamespace(share_multi_gpu=False))
    floor = lone_floor(now, t_new, policy._joins(view, "v100", "new", ("old",)), group, residents)
    least = min(cost_of_every_gpu(group, residents, now, t_new, n_new, n_old))[0]
    assert least - 1e-6 * (1.0 + t_new / n_new + 1e6 / n_old) < floor <= least


def test_residents_whose_co_runner_left_in_this_round_stay_out_of_the_kept_order():
    """GpuGroup.by_finish keeps such a GPU unordered until the Simulator has set its resident's solo rate."""
    random.seed(1)
    now = 500.0
    group, residents = lone_group([random.uniform(1.0, 900.0) for _ in range(20)], 1.0, now, {3}, {5, 8})
    order = group.by_finish(now)
    assert {gpu for _, gpu in order} == set(range(20)) - {3, 5, 8}
    assert group.unordered() == {3, 5, 8} and list(group) == list(range(20))
    group.check()  # the kept progress is the residents'
    for gpu in (5, 8):  # the Simulator sets their solo rate after the round
        job = residents[gpu][0]
        job.remaining, job.last_update = solo_left(job, now + 1.0) * job.speed, now + 1.0
        job.rate, job.colocated = job.speed, False
    order = group.by_finish(now + 1.0)
    assert {gpu for _, gpu in order} == set(range(20)) - {3}
    group.check()


def test_a_rounds_wait_is_the_kth_predicted_end_at_its_first_offer(monkeypatch):
    """The wait asked later in a round, after placements, is still the k-th end as at the round's first offer."""
    # every 3000 s: four long c jobs fill the GPUs, then three short b jobs come at once (b next to c does not gain)
    rows = [(7 * r + i, 3000.0 * r + (10.0 if i >= 4 else 0.0), 50.0 + 10 * i if i >= 4 else 1000.0 + r, 1,
             "b" if i >= 4 else "c") for r in range(8) for i in range(7)]
    policy, asked = Coloc(), []

    class Checked(coloc_module.RoundWaits):
        def __init__(self, ends, view, most):
            super().__init__(ends, view, most)
            self.fresh = sorted(job.remaining_at(view.now) / job.speed / policy._predicted_factor(view, job)
                                for job in view.running.values())
            self.view, self.placements = view, view.stats["placements"]

        def wait(self, waiting):
            for k in sorted({waiting, 0, 1, 7, self._most} - {k for k in (1, 7) if k > self._most}):
                assert super().wait(k) == self.fresh[min(k, len(self.fresh) - 1)]
            with pytest.raises(ValueError, match="at most"):
                super().wait(self._most + 1)  # more waiting than the round's offers: a caller's error
            asked.append(self.view.stats["placements"] > self.placements)
            return super().wait(waiting)

    monkeypatch.setattr(coloc_module, "RoundWaits", Checked)
    spec = ClusterSpec((("v100", 4),), gpus_per_node=2)
    Simulator(trace(rows), truth_abc(), policy, spec, predictions(ABC, stds={("a", "b"): (0.05, 0.1)})).run()
    assert len(asked) > 20 and any(asked), f"waits asked: {len(asked)}, after a placement in the round: {sum(asked)}"


def test_kept_ends_in_any_column_order_sort_as_a_fresh_loop():
    view = SimpleNamespace(changed_jobs=None, running={}, now=0.0)
    ends = PredictedEnds(view, lambda job: 0.5 + job.job_id % 3 / 4)
    jobs = []
    for i in range(300):
        job = Job(i, 0.0, 10.0 + i, 1, "a")
        job.state, job.remaining, job.rate, job.last_update, job.speed = RUNNING, 10.0 + (i * 7919) % 301, 0.8, 0.0, 1.0
        jobs.append(job)
    rng = np.random.default_rng(0)
    for step in range(20):
        for job in rng.choice(jobs, 25, replace=False):
            if job.job_id in view.running:
                del view.running[job.job_id]
            else:
                view.running[job.job_id] = job
            view.changed_jobs.add(job.job_id)
        view.now = float(step)
        fresh = sorted(j.remaining_at(view.now) / j.speed / (0.5 + j.job_id % 3 / 4) for j in view.running.values())
        assert kept_ends(ends, view) == fresh and len(ends) == len(fresh)


def test_coloc_keeps_no_stale_progress_when_co_runners_leave(gavel):
    """Rounds right after a co-runner left a GPU, with every index checked after each round: a kept order that
    took the remaining job at its shared rate would go stale (GpuGroup.check)."""
    solo, pairs = gavel
    truth = GroundTruth(solo, pairs, "v100")
    table = traces.poisson(800, truth.workloads("v100"), seed=3, load=2.0, total_gpus=40, gpu_mix={1: 8, 2: 1, 4: 1})
    for name in ("coloc", "oracle"):
        policy = policies.get(name, truth=truth) if name == "oracle" else policies.get(name)
        preds = None if name == "oracle" else perturbed(truth)
        result = Simulator(table, truth, policy, ClusterSpec((("v100", 40),)), preds, 30.0, check_every=1).run()
        assert (result.jobs["colocated_time"] > 0).sum() > 100


def contended_run(gavel, name: str, seed: int, skip: bool, monkeypatch, checked: list | None = None):
    """One run of a small contended Poisson scenario (two device types, queues long and short) with coloc's test of
    an offer (JctPack._declines) on or off; `checked` (a list) gets, for every offer the test declines unsearched,
    what the search finds for it (None: it declines too)."""
    solo, pairs = gavel
    truth = GroundTruth(solo, pairs, "v100")
    table = traces.poisson(500, truth.workloads("v100"), seed=seed, load=1.6, total_gpus=24, gpu_mix={1: 8, 2: 1, 4: 1})
    policy = policies.get(name, truth=truth) if name == "oracle" else policies.get(name)
    monkeypatch.setattr(type(policy), "skip_unpaying", skip)
    if checked is not None:
        declines = type(policy)._declines

        def declines_checked(self, view, job, wait, behind, ceiling=None):
            declined = declines(self, view, job, wait, behind, ceiling)
            if declined:
                self.skip_unpaying = False
                checked.append(self._best_gpu(view, job, wait, behind))
                self.skip_unpaying = True
            return declined

        monkeypatch.setattr(type(policy), "_declines", declines_checked)
    preds = None if name == "oracle" else perturbed(truth, seed)
    spec = ClusterSpec((("v100", 16), ("p100", 8)), gpus_per_node=4)
    return Simulator(table, truth, policy, spec, preds, 30.0, check_every=7).run().jobs


@pytest.mark.parametrize("name", ["coloc", "coloc-online", "oracle"])
@pytest.mark.parametrize("seed", range(3))
def test_offers_declined_unsearched_are_those_the_search_declines(gavel, name, seed, monkeypatch):
    """The test of an offer against its wait (JctPack._declines) is a bound, never an approximation: every offer it
    declines, the search declines too, and the runs with and without it are the same, job for job."""
    checked = []
    with monkeypatch.context() as patch:
        searched = contended_run(gavel, name, seed, False, patch)
    with monkeypatch.context() as patch:
        unsearched = contended_run(gavel, name, seed, True, patch, checked)
    assert len(checked) > 50 and all(found is None for found in checked), (len(checked), checked[:5])
    pd.testing.assert_frame_equal(unsearched, searched)
    assert (searched["colocated_time"] > 0).sum() > 20  # (a scenario where sharing happens)


@pytest.mark.parametrize("name", ["coloc", "coloc-online"])
def test_a_rounds_ceiling_is_never_below_its_wait(gavel, name, monkeypatch):
    """RoundWaits.at_most, read off the cluster's one-job GPUs, is at least the wait the ends give, and finite
    often enough to spare reading them."""
    pairs = []

    class Checked(coloc_module.RoundWaits):
        def at_most(self, waiting):
            most = super().at_most(waiting)
            pairs.append((most, self.wait(waiting)))
            return most

    monkeypatch.setattr(coloc_module, "RoundWaits", Checked)
    contended_run(gavel, name, 0, True, monkeypatch)
    assert all(most >= wait for most, wait in pairs), [p for p in pairs if p[0] < p[1]][:5]
    assert sum(most < math.inf for most, _ in pairs) > 100
