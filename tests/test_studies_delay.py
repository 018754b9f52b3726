"""coloc.studies.delay: the state a timed round starts from, and one row per policy and queue length."""

import time

import pandas as pd
import pytest

from coloc.policies.base import Policy
from coloc.sim.cluster import ClusterSpec
from coloc.sim.interference import GroundTruth
from coloc.sim.job import QUEUED, RUNNING
from coloc.sim.predictions import Predictions
from coloc.sim.view import Profile
from coloc.studies import delay

TESTBED = "k80:4,p100:4,v100:8"


@pytest.fixture(scope="module")
def truth(gavel):
    solo, pairs = gavel
    return GroundTruth(solo, pairs, "v100")


@pytest.fixture(scope="module")
def predictions(truth):
    """The measured pairs as predictions and every job type at 50% utilization: what a round costs does not
    depend on the values (the pipeline reads the out-of-fold files)."""
    utils = Predictions({}, utils={(d, w): 0.5 for d in truth.devices for w in truth.workloads(d)})
    return Predictions.from_truth(truth, utils)


def jobs(truth, n=30, seed=0, cluster=TESTBED):
    spec, profile = ClusterSpec.parse(cluster, gpus_per_node=4), Profile.of(truth)
    draw = (spec, profile, 1800.0, 1.0, {1: 8, 2: 1, 4: 1})
    return (spec, profile, delay.draw_jobs(n, truth.workloads("v100"), seed, *draw),
            delay.draw_jobs(spec.total_gpus, truth.workloads("v100"), seed + 7, *draw, first_id=n))


def state(truth, predictions, policy="fifo", n=30, busy_share=0.5, seed=0, cluster=TESTBED):
    spec, profile, queued, residents = jobs(truth, n, seed, cluster)
    made = delay.make_policy(policy, truth)
    return made, delay.round_state(made, profile, spec, predictions, queued, residents, busy_share, seed)


def test_a_round_works_on_copies_so_one_draw_serves_every_policy(truth, predictions):
    spec, profile, queued, residents = jobs(truth, n=25)
    before = [(j.job_id, j.state, j.remaining, j.gpus) for j in queued + residents]
    for name in ("isacpp", "isacpp"):
        policy = delay.make_policy(name, truth)
        view = delay.round_state(policy, profile, spec, predictions, queued, residents, 0.5, 0)
        _, placed = delay.time_round(policy, view)
        assert placed > 0 and len(view.queue) == 25 - placed
    assert [(j.job_id, j.state, j.remaining, j.gpus) for j in queued + residents] == before


def test_the_round_starts_with_the_queue_asked_for_and_residents_part_way_through(truth, predictions):
    _, view = state(truth, predictions, n=37, busy_share=0.5)
    assert len(view.queue) == 37 and all(job.state == QUEUED for job in view.queue)
    assert 6 <= view.cluster.busy <= 8  # half of 16 GPUs, less a gang job that would overshoot
    assert view.running and all(job.state == RUNNING for job in view.running.values())
    for job in view.running.values():
        left = job.remaining_at(view.now)
        assert 0.0 < left < job.work  # started in the past, not finished
        assert job.placed_at < view.now and job.factor == 1.0
        assert len({gpu for gpu in job.gpus}) == job.num_gpus
        assert all(view.cluster.residents[g] == [job] for g in job.gpus)  # alone on its GPUs


def test_every_policy_starts_from_the_same_residents_and_a_seed_repeats_its_state(truth, predictions):
    def layout(view):
        return sorted((j.job_id, j.workload, j.gpus, round(j.remaining_at(view.now), 6)) for j in view.running.values())

    _, fifo = state(truth, predictions, "fifo", seed=3)
    _, coloc = state(truth, predictions, "coloc", seed=3)
    _, other = state(truth, predictions, "fifo", seed=4)
    assert layout(fifo) == layout(coloc) and layout(fifo) != layout(other)
    assert sorted(j.job_id for j in fifo.queue) == sorted(j.job_id for j in coloc.queue)


def test_an_idle_cluster_is_a_busy_share_of_zero(truth, predictions):
    _, view = state(truth, predictions, busy_share=0.0)
    assert view.cluster.busy == 0 and not view.running and view.now == 0.0


def test_measure_gives_a_row_per_cluster_queue_length_seed_and_policy(truth, predictions):
    names = ["fifo", "tiresias", "horus", "isacpp", "coloc", "oracle"]
    table = delay.measure(truth, predictions, names, [5, 40], [TESTBED, "v100:8"], [0, 1], gpu_mix={1: 3, 2: 1},
                          repeats=2)
    assert list(table.columns) == delay.COLUMNS and len(table) == 2 * 2 * 2 * len(names)
    assert table.groupby(["cluster", "queued_jobs", "seed"])["policy"].apply(list).map(names.__eq__).all()
    assert set(table["gpus"]) == {16, 8}
    assert (table["decision_s"] > 0).all() and (table["placed"] <= table["queued_jobs"]).all()
    fifo = table[table["policy"] == "fifo"]
    # fifo never shares: it places at most the idle GPUs; the packing policies place more on a long queue
    assert (fifo["placed"] <= fifo["gpus"] - fifo["busy_gpus"]).all()
    long_queue = table[(table["queued_jobs"] == 40) & (table["cluster"] == TESTBED)].set_index(["seed", "policy"])
    assert (long_queue.xs("isacpp", level="policy")["placed"] > long_queue.xs("fifo", level="policy")["placed"]).all()
    assert dict(zip(table["policy"], table["kind"], strict=True))["oracle"] == "oracle"


def test_the_time_is_one_schedule_call_not_the_reset(truth, predictions, monkeypatch):
    class SlowResetFastRound(Policy):  # test double: only its timing matters
        def reset(self, view):
            time.sleep(0.2)

        def schedule(self, view):
            time.sleep(0.02)

    seconds, placed = delay.time_round(SlowResetFastRound(), state(truth, predictions)[1])
    assert 0.02 <= seconds < 0.2 and placed == 0


@pytest.mark.parametrize("names, queued, match", [
    (["horus~horus-implied"], [10], "without '~<predictor>'"),
    (["nosuch"], [10], "unknown policy 'nosuch'"),
    (["fifo"], [0, 10], r"queued_jobs \[0, 10\]"),
    (["fifo"], [10], "repeats 0"),
])
def test_bad_settings_are_refused_before_any_measurement(truth, predictions, names, queued, match):
    with pytest.raises((ValueError, KeyError), match=match):
        delay.measure(truth, predictions, names, queued, [TESTBED], [0], repeats=0 if "repeats" in match else 1)


def test_a_predictive_policy_without_predictions_for_a_cluster_device_is_refused(truth):
    only_v100 = Predictions({k: v for k, v in truth.pair_norms().items() if k[0] == "v100"})
    with pytest.raises(ValueError, match="lack .* feasible pairs on k80"):
        delay.measure(truth, only_v100, ["coloc"], [10], [TESTBED], [0])
    with pytest.raises(ValueError, match="none were given"):
        delay.measure(truth, None, ["isacpp"], [10], [TESTBED], [0])
    assert len(delay.measure(truth, None, ["fifo"], [10], [TESTBED], [0])) == 1


def test_summary_is_per_cluster_policy_and_queue_length():
    table = pd.DataFrame({"policy": "fifo", "kind": "baseline", "queued_jobs": [20, 20, 100], "cluster": "v100:8",
                          "gpus": 8, "seed": [0, 1, 0], "decision_s": [1.0, 3.0, 5.0], "placed": [2, 4, 8],
                          "busy_gpus": 4})
    out = delay.summary(table)
    assert out[["queued_jobs", "decision_s_mean", "decision_s_min", "decision_s_max", "placed_mean"]].values.tolist() == \
        [[20, 2.0, 1.0, 3.0, 3.0], [100, 5.0, 5.0, 5.0, 8.0]]


def test_job_types_are_those_of_the_families_asked_for(truth):
    assert set(delay.job_types(truth)) == set(truth.workloads("v100"))
    kept = delay.job_types(truth, ["resnet18", "lm"])
    assert kept and {w.split("-")[0] for w in kept} == {"resnet18", "lm"}
    with pytest.raises(ValueError, match="no job type of families \\['gpt9'\\]"):
        delay.job_types(truth, ["gpt9"])
