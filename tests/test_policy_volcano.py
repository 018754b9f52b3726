"""volcano: FIFO with skipping, each job on the lowest-index GPU whose free memory takes it, blind to interference."""
import pytest
from sim_cases import ABC, tables, trace

from coloc import policies
from coloc.sim import ClusterSpec, GroundTruth, simulate
from coloc.sim.engine import Simulator

GIB = 2**30


def truth_with_memory(mem_gib: dict[str, float], norms=ABC, infeasible=()):
    solo, pairs = tables(norms, infeasible=infeasible)
    solo = solo.assign(mem_bytes=solo["workload"].map(lambda w: mem_gib[w] * GIB))
    return GroundTruth(solo, pairs, "v100", memory_source="hand")


def placements(result) -> dict[int, float]:
    return dict(zip(result.jobs["job_id"], result.jobs["start_time"]))


def run(rows, truth, gpus=2, cap=4):
    return simulate(trace(rows), truth, policies.get("volcano"),
                    ClusterSpec((("v100", gpus),), gpus_per_node=gpus, max_jobs_per_gpu=cap), check_every=1)


def test_next_job_goes_on_gpu_0_while_it_fits_even_with_gpu_1_idle():
    # v100: 16 GiB. a: 5 GiB each. Three fit on GPU 0 (15 GiB), the fourth goes to GPU 1.
    truth = truth_with_memory({"a": 5.0, "b": 5.0, "c": 5.0})
    sim = Simulator(trace([(i, 0.0, 100.0, 1, "a") for i in range(4)]), truth, policies.get("volcano"),
                    ClusterSpec((("v100", 2),), gpus_per_node=2, max_jobs_per_gpu=4))
    seen = []
    add = sim.view.cluster.add
    sim.view.cluster.add = lambda job, gpus: (seen.append((job.job_id, tuple(gpus))), add(job, gpus))
    sim.run()
    assert seen == [(0, (0,)), (1, (0,)), (2, (0,)), (3, (1,))]


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
