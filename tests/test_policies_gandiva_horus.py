"""Gandiva's cost in Horus's simulator (gandiva-horus): the score by hand, its first-come queue, its limits, and
where it places against Horus."""
import itertools

import pytest
from sim_cases import trace
from test_policies_horus import GIB, NAMES, V100, round_of, utils, world

from coloc import policies
from coloc.policies.gandiva_horus import gandiva_cost
from coloc.policies.horus import HEADROOM_BYTES
from coloc.sim import ClusterSpec, simulate
from coloc.sim.job import QUEUED


# gandiva-horus: the Gandiva of the Horus reference (its baseline), Horus's placement with Gandiva's score
def test_gandiva_score_by_hand():
    """1.3 (M + m) / D + min(U, 1) + n; the job's own utilization does not enter."""
    assert gandiva_cost(2 * GIB, 1 * GIB, V100, 0.7, 1) == pytest.approx(1.3 * 3 / 16 + 0.7 + 1)  # 1.94375
    assert gandiva_cost(2 * GIB, 1 * GIB, V100, 1.4, 2) == pytest.approx(1.3 * 3 / 16 + 1.0 + 2)  # capped at 100%
    assert gandiva_cost(0.0, 4 * GIB, V100, 0.0, 0) == pytest.approx(1.3 * 4 / 16)  # idle: 0.325
    assert gandiva_cost(0.0, 4 * GIB, None, 0.0, 0) == 0.0  # unknown memory adds 0



@pytest.mark.parametrize("resident_u", [0.0, 0.1, 0.5, 1.0])
def test_gandiva_score_never_prefers_an_occupied_gpu_to_an_idle_one(resident_u):
    for m, used, n in itertools.product([0.0, 1 * GIB, 6 * GIB], [0.0, 2 * GIB, 8 * GIB], [1, 2]):
        assert gandiva_cost(0.0, m, V100, 0.0, 0) < gandiva_cost(used, m, V100, resident_u * n, n)


def test_gandiva_horus_packs_next_to_the_least_loaded_gpu_where_horus_fills_one_to_100_percent():
    """Two nodes of one GPU: GPU 0 holds x (utilization 0.2), GPU 1 holds b (0.6), 1 GiB each; a (0.3) arrives.
    Gandiva: 1.3 x 2/16 + 0.2 + 1 = 1.3625 on GPU 0 against 1.7625 on GPU 1. Horus: |0.2 + 0.3 - 1| = 0.5 there
    (1.6625) against |0.6 + 0.3 - 1| = 0.1 (1.2625): Horus joins b, Gandiva joins the lighter x."""
    truth = world({w: 1 * GIB for w in NAMES})
    spec = ClusterSpec((("v100", 2),), gpus_per_node=1, max_jobs_per_gpu=3)
    preds = utils(x=0.2, b=0.6, a=0.3)
    residents = [(0, "x", (0,)), (1, "b", (1,))]
    view, jobs = round_of(truth, preds, spec, residents, [(2, "a")], policies.get("gandiva-horus"))
    assert jobs[2].gpus == (0,)
    policy = policies.get("gandiva-horus")
    policy.reset(view)
    assert policy.cost(view, "v100", ("x",), "a") == pytest.approx(1.3625)
    assert policy.cost(view, "v100", ("b", "x"), "c") == pytest.approx(1.3 * 3 / 16 + 0.8 + 2)  # 3.04375
    view, jobs = round_of(truth, preds, spec, residents, [(2, "a")], policies.get("horus"))
    assert jobs[2].gpus == (1,)


def test_gandiva_horus_queue_is_first_come_and_its_head_blocks():
    """One node of 2 GPUs. x runs on GPU 0 from 0 to 100; the 2-GPU job (submitted at 1) waits for both GPUs; b
    (submitted at 2) would fit on GPU 1, but the head is tried alone (the reference's schedule_fifo): b starts
    after the 2-GPU job, at 200. Horus looks at five jobs and starts b at 2."""
    truth = world({w: 1 * GIB for w in NAMES})
    spec = ClusterSpec((("v100", 2),), gpus_per_node=2, max_jobs_per_gpu=3)
    rows = [(1, 0.0, 100.0, 1, "x"), (2, 1.0, 100.0, 2, "a"), (3, 2.0, 100.0, 1, "b")]
    starts = simulate(trace(rows), truth, policies.get("gandiva-horus"), spec, utils()).jobs
    assert dict(zip(starts["job_id"], starts["start_time"], strict=True)) == {1: 0.0, 2: 100.0, 3: 200.0}
    horus = simulate(trace(rows), truth, policies.get("horus"), spec, utils()).jobs
    assert horus.set_index("job_id")["start_time"][3] == 2.0


def test_gandiva_horus_keeps_3_jobs_per_gpu_and_500_mib_free():
    truth = world({w: 1 * GIB for w in NAMES})
    spec = ClusterSpec((("v100", 1),), max_jobs_per_gpu=4)
    view, jobs = round_of(truth, utils(), spec, [(0, "x", (0,)), (1, "a", (0,))], [(2, "b"), (3, "c")],
                          policies.get("gandiva-horus"))
    assert jobs[2].gpus == (0,) and jobs[3].state == QUEUED  # first come: b joins, c would be the fourth
    tight = world({w: (V100 - HEADROOM_BYTES) / 2 for w in NAMES})  # a pair leaves exactly 500 MiB
    view, jobs = round_of(tight, utils(), spec, [(0, "x", (0,))], [(1, "a")], policies.get("gandiva-horus"))
    assert jobs[1].state == QUEUED
