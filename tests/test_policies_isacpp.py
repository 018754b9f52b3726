"""ISACPP's placement rule in the simulator: no cap of its own beyond memory, idle GPUs at 0, and the released
plugin's placement (a node scored by its worst GPU, then the lowest-index GPU with enough free memory)."""
import pytest
from sim_cases import ABC, predictions, tables, trace

from coloc import policies
from coloc.policies.volcano import draw
from coloc.sim import ClusterSpec, GroundTruth, Simulator, simulate

GB = 2.0 ** 30  # a V100 has 16 GB (coloc.devices)
PREDS = predictions(ABC)


def truth_with_memory(gb: dict[str, float]) -> GroundTruth:
    solo, pairs = tables(ABC)
    return GroundTruth(solo.assign(mem_bytes=solo["workload"].map(gb) * GB), pairs, "v100")


def gpus_of(sim) -> dict[int, tuple[int, ...]]:
    placed, add = {}, sim.view.cluster.add
    sim.view.cluster.add = lambda job, gpus: (placed.setdefault(job.job_id, tuple(gpus)), add(job, gpus))
    return placed


def test_isacpp_places_a_third_and_a_fourth_job_on_a_gpu_when_memory_allows():
    # one V100, the cluster's cap 4, four 3 GB jobs at once: 12 GB fit in 16, so all four start at 0 on GPU 0
    rows = [(i, 0.0, 100.0, 1, "abca"[i]) for i in range(4)]
    truth = truth_with_memory({"a": 3.0, "b": 3.0, "c": 3.0})
    result = simulate(trace(rows), truth, policies.get("isacpp"), ClusterSpec((("v100", 1),), max_jobs_per_gpu=4),
                      PREDS)
    assert (result.jobs["start_time"] == 0.0).all() and (result.jobs["colocated_time"] > 0).all()


def test_isacpp_refuses_a_job_whose_memory_request_does_not_fit_beside_the_residents():
    # 7 GB jobs: two fit in 16 GB, a third (21 GB) does not, though the cap (4) would allow it: it waits
    rows = [(i, 0.0, 100.0 + 50.0 * i, 1, "abc"[i]) for i in range(3)]
    truth = truth_with_memory({"a": 7.0, "b": 7.0, "c": 7.0})
    result = simulate(trace(rows), truth, policies.get("isacpp"), ClusterSpec((("v100", 1),), max_jobs_per_gpu=4),
                      PREDS)
    start = dict(zip(result.jobs["job_id"], result.jobs["start_time"], strict=True))
    assert start[0] == start[1] == 0.0 and start[2] > 0.0
    # without memory requests, the world's fit rule alone decides: all three start at once
    free = simulate(trace(rows), truth_with_memory({"a": float("nan"), "b": float("nan"), "c": float("nan")}),
                    policies.get("isacpp"), ClusterSpec((("v100", 1),), max_jobs_per_gpu=4), PREDS)
    assert (free.jobs["start_time"] == 0.0).all()


def test_isacpp_scores_an_idle_gpu_exactly_zero_and_takes_it_before_a_shared_one():
    rows = [(1, 0.0, 500.0, 1, "c"), (2, 5.0, 100.0, 1, "c")]
    sim = Simulator(trace(rows), truth_with_memory({"a": 1.0, "b": 1.0, "c": 1.0}), policies.get("isacpp"),
                    ClusterSpec((("v100", 2),)), PREDS)
    placed = gpus_of(sim)
    result = sim.run()
    assert placed == {1: (0,), 2: (1,)} and (result.jobs["colocated_time"] == 0.0).all()
    job = sim.jobs[2]
    assert sim.policy.gpu_score(sim.view, job, "v100", 1) == 0.0  # idle at the end of the run


@pytest.mark.parametrize("name, gpu", [("isacpp-released", 0), ("isacpp", 1)])
def test_released_plugin_shares_gpu_0_while_gpu_1_stays_idle(name, gpu):
    # one node of two V100s, a job on GPU 0; a second arrives. The released plugin scores the node by its worst
    # GPU (GPU 0's interference), then Volcano's predicate takes the lowest-index GPU with free memory: GPU 0,
    # with GPU 1 idle. The published rule (least score per GPU) takes the idle GPU 1 (score 0).
    rows = [(1, 0.0, 500.0, 1, "a"), (2, 5.0, 100.0, 1, "c")]
    sim = Simulator(trace(rows), truth_with_memory({"a": 4.0, "b": 4.0, "c": 4.0}), policies.get(name),
                    ClusterSpec((("v100", 2),), gpus_per_node=2), PREDS)
    placed = gpus_of(sim)
    result = sim.run()
    assert placed == {1: (0,), 2: (gpu,)}
    assert (dict(zip(result.jobs["job_id"], result.jobs["colocated_time"], strict=True))[2] > 0) == (gpu == 0)


def test_released_plugin_goes_to_the_node_whose_worst_gpu_interferes_least():
    # two nodes of two V100s, three jobs at 0 (remaining 900, 900, 100 s). a: every node idle (worst 0), a tie that
    # Volcano draws: job 1 draws node 1 (draw(1, 0) % 2 == 1), GPU 2. c: node 1's worst is GPU 2 (> 0), node 0's 0:
    # node 0, GPU 0. b: node 1's worst is b next to a, node 0's b next to c (GPUs 1 and 3 idle score 0). Throughput-scaled, pair_score with the new job ending first:
    #   next to a: n_b = 0.8, n_a = 0.5: c_new = 1 + 2/0.8 = 3.5, c_old = 1 + 2/0.5 = 5, a = 100/0.8 = 125:
    #     3.5 + 125 / (125 + 900 - 0.5 x 125) x 5 = 4.149
    #   next to c: n_b = 0.4, n_c = 0.3: c_new = 6, c_old = 7.667, a = 250: 6 + 250 / (250 + 900 - 75) x 7.667 = 7.783
    # node 1 wins and Volcano takes its lowest GPU with free memory: b shares GPU 2 while GPUs 1 and 3 stay idle.
    assert draw(1, 0) % 2 == 1
    rows = [(1, 0.0, 900.0, 1, "a"), (2, 0.0, 900.0, 1, "c"), (3, 0.0, 100.0, 1, "b")]
    sim = Simulator(trace(rows), truth_with_memory({"a": 4.0, "b": 4.0, "c": 4.0}), policies.get("isacpp-released"),
                    ClusterSpec((("v100", 4),), gpus_per_node=2), PREDS)
    placed = gpus_of(sim)
    sim.run()
    assert placed == {1: (2,), 2: (0,), 3: (2,)}


def test_isacpp_refuses_a_negative_contention_naming_the_pair(monkeypatch):
    """The pair search relies on the score rising then falling, which needs contentions >= 0 (every form's are)."""
    policy = policies.get("isacpp")
    rows = [(0, 0.0, 100.0, 1, "a"), (1, 0.0, 80.0, 1, "b"), (2, 1.0, 50.0, 1, "c")]
    monkeypatch.setattr(type(policy), "contention", lambda self, device, workload, others, factor: -0.5)
    with pytest.raises(ValueError, match=r"contentions -0.5 \(c next to a\)"):
        simulate(trace(rows), GroundTruth(*tables(ABC), "v100"), policy, ClusterSpec((("v100", 2),)), PREDS)
