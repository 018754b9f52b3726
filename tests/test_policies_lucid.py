"""lucid: Lucid's packing by label, memory and time, then consolidated placement (coloc.policies.lucid)."""
import pytest
from sim_cases import ABC, tables, trace

from coloc import policies
from coloc.policies.lucid import labels_may_pack, whole_nodes_first
from coloc.sim import ClusterSpec, GroundTruth, Simulator, simulate
from coloc.sim.cluster import Cluster
from coloc.sim.job import Job

GIB = 2**30
ALL_PAIRS = {(a, b): (0.8, 0.8) for i, a in enumerate("abcd") for b in "abcd"[i:]}


def truth_with(labels: dict[str, int], mem_gib: dict[str, float] | None = None, norms=ALL_PAIRS, infeasible=(),
               device="v100"):
    solo, pairs = tables(norms, device=device, infeasible=infeasible, labels=labels)
    if mem_gib is not None:
        solo = solo.assign(mem_bytes=solo["workload"].map(lambda w: mem_gib[w] * GIB))
    return GroundTruth(solo, pairs, device, memory_source="hand")


def placements(rows, truth, gpus=2, gpus_per_node=8, cap=2, share_multi_gpu=False):
    """[(job_id, gpus)] in placement order, and the run's jobs table."""
    spec = ClusterSpec(((truth.reference_device, gpus),), gpus_per_node=gpus_per_node, max_jobs_per_gpu=cap,
                       share_multi_gpu=share_multi_gpu)
    sim = Simulator(trace(rows), truth, policies.get("lucid"), spec)
    seen, add = [], sim.view.cluster.add
    sim.view.cluster.add = lambda job, gpus: (seen.append((job.job_id, tuple(gpus))), add(job, gpus))
    result = sim.run()
    return seen, result.jobs.set_index("job_id")


def test_registered_as_a_baseline_that_packs_pairs():
    assert "lucid" in policies.names()
    assert policies.info("lucid") == {"kind": "baseline", "needs": (), "optional": ()}
    assert policies.get("lucid").max_jobs_per_gpu == 2


@pytest.mark.parametrize("label, other, packs", [(0, 0, True), (0, 2, True), (1, 1, True), (2, 0, True),
                                                 (1, 2, False), (2, 1, False), (2, 2, False)])
def test_the_labels_decide_who_may_pack_with_whom(label, other, packs):
    assert labels_may_pack(label, other) is packs
    # and in a run: a (label `other`) holds the only GPU, b (label `label`) arrives: it joins a or waits for it
    truth = truth_with({"a": other, "b": label, "c": 0, "d": 0})
    seen, jobs = placements([(0, 0.0, 1000.0, 1, "a"), (1, 1.0, 600.0, 1, "b")], truth, gpus=1)
    assert seen == [(0, (0,)), (1, (0,))]
    assert jobs.loc[1, "start_time"] == (1.0 if packs else jobs.loc[0, "finish_time"])


def test_packs_before_using_an_idle_gpu_and_joins_the_earliest_placed_partner():
    truth = truth_with({"a": 1, "b": 2, "c": 0, "d": 0})
    # two a (1 + 1 <= 2): the second joins the first on GPU 0 though GPUs 1 and 2 are idle; c finds the pair full
    rows = [(0, 0.0, 1000.0, 1, "a"), (1, 0.0, 1000.0, 1, "a"), (2, 5.0, 900.0, 1, "c")]
    seen, _ = placements(rows, truth, gpus=3)
    assert seen == [(0, (0,)), (1, (0,)), (2, (1,))]
    # a (1) may not join b (2): it takes GPU 1; c (0) may join either and joins the one placed first, b on GPU 0
    rows = [(0, 0.0, 1000.0, 1, "b"), (1, 1.0, 1000.0, 1, "a"), (2, 5.0, 900.0, 1, "c")]
    seen, _ = placements(rows, truth, gpus=3)
    assert seen == [(0, (0,)), (1, (1,)), (2, (0,))]


def test_time_aware_a_job_does_not_join_one_less_than_half_its_length():
    truth = truth_with({"a": 0, "b": 0, "c": 0, "d": 0})
    short = [(0, 0.0, 100.0, 1, "a"), (1, 1.0, 201.0, 1, "b")]  # 201 > 2 x 100: b waits or takes an idle GPU
    seen, _ = placements(short, truth, gpus=2)
    assert seen == [(0, (0,)), (1, (1,))]
    even = [(0, 0.0, 100.0, 1, "a"), (1, 1.0, 200.0, 1, "b")]  # 200 <= 2 x 100: b joins a
    seen, _ = placements(even, truth, gpus=2)
    assert seen == [(0, (0,)), (1, (0,))]


def test_queue_is_least_gpu_time_first():
    # one GPU, busy with a label-2 job: the queued jobs start when it ends, least duration x GPUs first
    truth = truth_with({"a": 2, "b": 2, "c": 2, "d": 2})
    rows = [(0, 0.0, 100.0, 1, "a"), (1, 1.0, 300.0, 1, "b"), (2, 2.0, 50.0, 1, "c"), (3, 3.0, 200.0, 1, "d")]
    seen, _ = placements(rows, truth, gpus=1)
    assert [job for job, _ in seen] == [0, 2, 3, 1]


def test_memory_fit_respected():
    # v100: 16 GiB. a (9 GiB) with b (7 GiB) is 16 GiB, not below the GPU's memory: b does not join a
    truth = truth_with({"a": 0, "b": 0, "c": 0, "d": 0}, {"a": 9.0, "b": 7.0, "c": 6.0, "d": 1.0})
    seen, jobs = placements([(0, 0.0, 500.0, 1, "a"), (1, 1.0, 500.0, 1, "b")], truth, gpus=1)
    assert seen == [(0, (0,)), (1, (0,))] and jobs.loc[1, "start_time"] == 500.0  # after a ends
    seen, jobs = placements([(0, 0.0, 500.0, 1, "a"), (1, 1.0, 500.0, 1, "c")], truth, gpus=1)
    assert jobs.loc[1, "start_time"] == 1.0  # 15 GiB: packed
    # the world's fit rule too: a pair measured as not fitting is not packed whatever the memory says
    norms = {k: v for k, v in ALL_PAIRS.items() if k != ("a", "d")}
    truth = truth_with({"a": 0, "b": 0, "c": 0, "d": 0}, {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}, norms=norms,
                       infeasible=(("a", "d"),))
    _, jobs = placements([(0, 0.0, 500.0, 1, "a"), (1, 1.0, 500.0, 1, "d")], truth, gpus=1)
    assert jobs.loc[1, "start_time"] == 500.0


def test_consolidated_placement_takes_the_node_with_fewest_idle_gpus_that_fits():
    truth = truth_with({"a": 2, "b": 2, "c": 2, "d": 2})  # labels 2: nothing packs
    rows = [(0, 0.0, 10.0, 3, "a"), (1, 0.0, 1000.0, 1, "b"), (2, 0.0, 1000.0, 3, "c"),
            (3, 20.0, 100.0, 1, "d"), (4, 30.0, 100.0, 2, "d")]
    seen, _ = placements(rows, truth, gpus=8, gpus_per_node=4)
    # by priority: job 0 (30 GPU-s) on node 0, job 1 (1000) on node 0's last GPU (the fullest node that fits),
    # job 2 (3000) on node 1; at 10 s job 0 ends: node 0 has 3 idle GPUs, node 1 one
    assert seen[:3] == [(0, (0, 1, 2)), (1, (3,)), (2, (4, 5, 6))]
    # job 3 (1 GPU) takes node 1's GPU 7, not GPU 0; job 4 (2 GPUs) node 0's lowest idle GPUs
    assert seen[3:] == [(3, (7,)), (4, (0, 1))]


def test_a_job_wider_than_a_node_takes_whole_idle_nodes_then_the_next_node():
    cluster = Cluster(ClusterSpec((("v100", 12),), gpus_per_node=4))
    busy = Job(99, 0.0, 10.0, 1, "a")
    cluster.add(busy, (0,))  # node 0: 3 idle; nodes 1, 2: 4 idle
    assert whole_nodes_first(cluster, "v100", 6, 4) == (4, 5, 6, 7, 8, 9)  # node 1 whole, 2 GPUs of node 2
    assert whole_nodes_first(cluster, "v100", 8, 4) == (4, 5, 6, 7, 8, 9, 10, 11)
    assert whole_nodes_first(cluster, "v100", 11, 4) == tuple(range(1, 12))  # nodes 1, 2, then 3 on node 0
    assert whole_nodes_first(cluster, "v100", 12, 4) is None  # three whole nodes: node 0 is not idle
    cluster.add(Job(98, 0.0, 10.0, 1, "a"), (4,))  # nodes 0 and 1 now 3 idle: 6 = node 2 + 2 of node 0
    assert whole_nodes_first(cluster, "v100", 6, 4) == (1, 2, 8, 9, 10, 11)
    assert whole_nodes_first(cluster, "v100", 8, 4) is None


def test_multi_gpu_jobs_pack_on_exactly_a_partner_of_the_same_gpu_count():
    truth = truth_with({"a": 0, "b": 0, "c": 0, "d": 0})
    rows = [(0, 0.0, 1000.0, 2, "a"), (1, 0.0, 1000.0, 1, "b"), (2, 1.0, 800.0, 2, "c"), (3, 2.0, 400.0, 1, "d")]
    seen, jobs = placements(rows, truth, gpus=4, gpus_per_node=4, share_multi_gpu=True)
    # b (1000 GPU-s) then a (2000): b on GPU 0, a on GPUs 1-2 (the fullest node fits: lowest idle GPUs)
    assert seen[:2] == [(1, (0,)), (0, (1, 2))]
    # c (2 GPUs) joins a's two GPUs, d (1 GPU) joins b: same GPU counts only, GPU 3 stays idle
    assert seen[2:] == [(2, (1, 2)), (3, (0,))]
    assert jobs.loc[2, "colocated_time"] > 0 and jobs.loc[3, "colocated_time"] > 0
    # a cluster that does not share multi-GPU jobs: c waits for idle GPUs (a job of 2 never shares); d still packs
    seen, jobs = placements(rows, truth, gpus=4, gpus_per_node=4)
    assert jobs.loc[2, "start_time"] > 1.0 and jobs.loc[2, "colocated_time"] == 0
    assert (3, (0,)) in seen and jobs.loc[3, "start_time"] == 2.0


def test_a_pair_is_full_and_the_one_left_is_a_partner_again():
    truth = truth_with({"a": 0, "b": 0, "c": 0, "d": 0})
    rows = [(0, 0.0, 1000.0, 1, "a"), (1, 1.0, 1000.0, 1, "b"), (2, 2.0, 1000.0, 1, "c")]
    seen, jobs = placements(rows, truth, gpus=1)
    # c finds the only GPU full (two jobs): it waits, and joins the survivor when the first of the pair ends
    assert seen[:2] == [(0, (0,)), (1, (0,))]
    first_end = min(jobs.loc[0, "finish_time"], jobs.loc[1, "finish_time"])
    assert jobs.loc[2, "start_time"] == pytest.approx(first_end)


def test_a_job_type_without_a_label_is_refused_by_name():
    solo, pairs = tables(ABC)  # no lucid_label column (as Gavel's solo table)
    truth = GroundTruth(solo, pairs, "v100")
    with pytest.raises(ValueError, match="job type 'a' has no packing label on 'v100'"):
        simulate(trace([(0, 0.0, 10.0, 1, "a")]), truth, policies.get("lucid"), ClusterSpec((("v100", 1),)))


def test_its_data_problem_names_a_job_type_without_a_label_before_any_run():
    """What a caller (benchmarks/sim_speed.py) asks to skip lucid up front, with the reason."""
    solo, pairs = tables(ABC)  # no lucid_label column
    assert policies.data_problem("lucid", GroundTruth(solo, pairs, "v100"), ["v100"], ["b", "a"]) == (
        "no packing label (the solo table's lucid_label) for 2 job type(s) on the cluster's devices, e.g. 'a' on "
        "'v100': Lucid's job types only")
    labelled = truth_with({"a": 0, "b": 1, "c": 2, "d": 1})
    assert policies.data_problem("lucid", labelled, ["v100"], ["a", "b", "c"]) is None
    assert policies.data_problem("fifo", GroundTruth(solo, pairs, "v100"), ["v100"], ["a"]) is None
