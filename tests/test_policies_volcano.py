"""volcano and volcano-firstfit: FIFO with skipping, blind to interference, sharing by memory alone.

volcano-firstfit: each job on the lowest-index GPU of the cluster whose free memory takes it. volcano: a node drawn
uniformly among the nodes with such a GPU (coloc.policies.volcano.draw, keyed by the job id), then that node's
lowest-index such GPU."""
import pytest
from sim_cases import ABC, tables, trace

from coloc import policies
from coloc.policies.volcano import draw
from coloc.sim import ClusterSpec, GroundTruth, simulate
from coloc.sim.engine import Simulator

GIB = 2**30


def truth_with_memory(mem_gib: dict[str, float], norms=ABC, infeasible=()):
    solo, pairs = tables(norms, infeasible=infeasible)
    solo = solo.assign(mem_bytes=solo["workload"].map(lambda w: mem_gib[w] * GIB))
    return GroundTruth(solo, pairs, "v100", memory_source="hand")


def placements(result) -> dict[int, float]:
    return dict(zip(result.jobs["job_id"], result.jobs["start_time"], strict=True))


def run(rows, truth, gpus=2, cap=4, policy="volcano-firstfit"):
    return simulate(trace(rows), truth, policies.get(policy),
                    ClusterSpec((("v100", gpus),), gpus_per_node=gpus, max_jobs_per_gpu=cap), check_every=1)


def placed(rows, truth, policy, spec) -> list[tuple[int, tuple[int, ...]]]:
    """(job id, GPUs) of every placement, in order."""
    sim = Simulator(trace(rows), truth, policies.get(policy), spec)
    seen = []
    add = sim.view.cluster.add
    sim.view.cluster.add = lambda job, gpus: (seen.append((job.job_id, tuple(gpus))), add(job, gpus))
    sim.run()
    return seen


def test_firstfit_next_job_goes_on_gpu_0_while_it_fits_even_with_gpu_1_idle():
    # v100: 16 GiB. a: 5 GiB each. Three fit on GPU 0 (15 GiB), the fourth goes to GPU 1.
    truth = truth_with_memory({"a": 5.0, "b": 5.0, "c": 5.0})
    seen = placed([(i, 0.0, 100.0, 1, "a") for i in range(4)], truth, "volcano-firstfit",
                  ClusterSpec((("v100", 2),), gpus_per_node=2, max_jobs_per_gpu=4))
    assert seen == [(0, (0,)), (1, (0,)), (2, (0,)), (3, (1,))]


def test_volcano_draws_the_node_then_takes_its_lowest_gpu_that_fits():
    # two nodes of two V100s; every node takes an a job (5 GiB of 16), so the node is the draw's: job 0 and job 1 draw
    # node 1 (draw % 2 == 1), job 3 draws node 0. On node 1 the GPU-share predicate gives job 1 GPU 2, next to job 0,
    # though GPU 3 and all of node 0 are idle; first fit would have put jobs 0 and 1 on GPU 0.
    assert [draw(i, 0) % 2 for i in (0, 1, 3)] == [1, 1, 0]
    truth = truth_with_memory({"a": 5.0, "b": 5.0, "c": 5.0})
    rows = [(i, 0.0, 100.0, 1, "a") for i in (0, 1, 3)]
    spec = ClusterSpec((("v100", 4),), gpus_per_node=2, max_jobs_per_gpu=4)
    assert placed(rows, truth, "volcano", spec) == [(0, (2,)), (1, (2,)), (3, (0,))]
    assert placed(rows, truth, "volcano-firstfit", spec) == [(0, (0,)), (1, (0,)), (3, (0,))]


def test_volcano_draws_only_among_nodes_that_take_the_job():
    # node 1's only GPU holds b (12 GiB of 16): a (5 GiB) fits only on node 0, whatever job 1 draws (node 1 by index)
    assert draw(1, 0) % 2 == 1
    truth = truth_with_memory({"a": 5.0, "b": 12.0, "c": 5.0})
    spec = ClusterSpec((("v100", 2),), gpus_per_node=1, max_jobs_per_gpu=4)
    seen = placed([(0, 0.0, 100.0, 1, "b"), (1, 1.0, 100.0, 1, "a")], truth, "volcano", spec)
    assert dict(seen)[0] == (1,) and dict(seen)[1] == (0,)  # job 0 drew node 1 (draw(0, 0) % 2 == 1)


@pytest.mark.parametrize("policy", ["volcano", "volcano-firstfit"])
@pytest.mark.parametrize("cap", [8, None])
def test_shares_past_four_jobs_while_memory_lasts(policy, cap):
    # one V100 (16 GiB), a cluster cap of 8 or none: six a jobs of 2 GiB all run at once on it (no cap of the
    # policy's own); at 3 GiB each only five fit (15 GiB), the sixth waits
    for mem, together in ((2.0, 6), (3.0, 5)):
        truth = truth_with_memory({"a": mem, "b": mem, "c": mem})
        result = run([(i, 0.0, 100.0, 1, "a") for i in range(6)], truth, gpus=1, cap=cap, policy=policy)
        assert (result.jobs["start_time"] == 0.0).sum() == together


def test_a_job_that_fits_nowhere_is_passed_over_and_a_later_one_starts():
    # GPU 0 holds a (10 GiB) and GPU 1 holds a; the queued b (10 GiB) fits neither, the c behind it (4 GiB) does
    truth = truth_with_memory({"a": 10.0, "b": 10.0, "c": 4.0})
    result = run([(0, 0.0, 100.0, 1, "a"), (1, 0.0, 100.0, 1, "a"), (2, 1.0, 50.0, 1, "b"), (3, 1.0, 50.0, 1, "c")],
                 truth)
    starts = placements(result)
    assert starts[3] == 1.0 and starts[2] > 1.0  # c started at once, past the waiting b


def test_the_world_fit_rule_holds_even_where_memory_would_allow():
    # b and c are measured as not fitting together: c waits for an idle GPU although memory would take it
    norms = {k: v for k, v in ABC.items() if k != ("b", "c")}
    truth = truth_with_memory({"a": 1.0, "b": 1.0, "c": 1.0}, norms=norms, infeasible=(("b", "c"),))
    result = run([(0, 0.0, 100.0, 1, "b"), (1, 0.0, 100.0, 1, "b"), (2, 1.0, 50.0, 1, "c")], truth, gpus=1)
    assert placements(result)[2] == pytest.approx(100.0 / 0.7)  # after the two b jobs (at 0.7 each) end


def test_blind_to_interference_and_cap_from_the_cluster():
    # b with c runs at 0.4 / 0.3 (the worst pair), yet c joins b on GPU 0 rather than the idle GPU 1
    truth = truth_with_memory({"a": 1.0, "b": 1.0, "c": 1.0})
    result = run([(0, 0.0, 100.0, 1, "b"), (1, 1.0, 100.0, 1, "c")], truth)
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc[1, "colocated_time"] > 0
    # with a cluster cap of 2, the third job goes to GPU 1 (memory would allow more)
    capped = run([(0, 0.0, 100.0, 1, "a"), (1, 0.0, 100.0, 1, "a"), (2, 0.0, 100.0, 1, "a")], truth, cap=2)
    assert capped.jobs["colocated_time"].gt(0).sum() == 2
