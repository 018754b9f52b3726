"""Horus as its authors' simulator builds it: cost, utilization-ordered queue, node then GPU, limits."""
import itertools

import pytest
from sim_cases import tables, trace

from coloc import policies
from coloc.policies.horus import HEADROOM_BYTES, horus_cost
from coloc.sim import ClusterSpec, GroundTruth, simulate, traces
from coloc.sim.job import QUEUED
from coloc.sim.predictions import Predictions
from coloc.sim.view import Profile, SchedulerView

GIB = 2 ** 30
V100 = 16 * GIB  # coloc.devices: V100 SXM2 16 GB
NAMES = ("a", "b", "c", "x")


def world(memory: dict[str, float] | None = None, infeasible=()) -> GroundTruth:
    """Every pair of NAMES measured as fitting (normalized throughput 0.8 each) but `infeasible`; solo mem_bytes."""
    norms = {(p, q): (0.8, 0.8) for p, q in itertools.combinations_with_replacement(NAMES, 2)
             if (p, q) not in infeasible}
    solo, pairs = tables(norms, infeasible=tuple(infeasible))
    if memory is not None:
        solo["mem_bytes"] = solo["workload"].map(memory)
    return GroundTruth(solo, pairs, "v100", memory_source="test")


def utils(**values) -> Predictions:
    return Predictions({}, utils={("v100", w): values.get(w, 0.5) for w in NAMES}, source="test")


def round_of(truth, preds, spec, residents, queued, policy=None):
    """One Horus round from a hand-made state: residents [(job id, workload, gpus)] already running, queued
    [(job id, workload)] waiting (submitted in that order). Returns the view and the policy."""
    policy = policy or policies.get("horus")
    profile = Profile.of(truth)
    view = SchedulerView.for_policy(policy, spec, profile, preds)
    rows = [(i, 0.0, 1000.0, len(gpus), w) for i, w, gpus in residents]
    rows += [(i, 1.0 + k, 100.0, 1, w) for k, (i, w) in enumerate(queued)]
    jobs = traces.jobs_from_trace(trace(rows), profile, spec)
    for i, _, gpus in residents:
        jobs[i].state = QUEUED
        view.queue.push(jobs[i])
        view.place(jobs[i], gpus)
    for i, _ in queued:
        jobs[i].state = QUEUED
        view.queue.push(jobs[i])
    policy.reset(view)
    policy.schedule(view)
    return view, jobs


@pytest.mark.parametrize("u", [0.0, 0.05, 0.3, 0.6, 0.95, 1.0])
@pytest.mark.parametrize("resident_u", [0.0, 0.1, 0.5, 1.0])
def test_an_idle_gpu_that_fits_never_costs_more_than_an_occupied_one(u, resident_u):
    for m, used, n in itertools.product([0.0, 1 * GIB, 6 * GIB], [0.0, 2 * GIB, 8 * GIB], [1, 2]):
        idle = horus_cost(0.0, m, V100, 0.0, u, 0)
        busy = horus_cost(used, m, V100, resident_u * n, u, n)
        assert idle <= busy, (u, resident_u, m, used, n)


@pytest.mark.parametrize("u", [0.05, 0.2, 0.5])
def test_horus_puts_a_job_on_an_idle_gpu_rather_than_next_to_a_light_one(u):
    """One GPU per node, GPU 0 holding a light job: the new job goes to the idle GPU 1 whatever its utilization
    (with coloc's former count weight 0.1 two light jobs shared the GPU instead)."""
    truth = world({w: 1 * GIB for w in NAMES})
    spec = ClusterSpec((("v100", 2),), gpus_per_node=1, max_jobs_per_gpu=3)
    view, jobs = round_of(truth, utils(x=u, a=u), spec, [(0, "x", (0,))], [(1, "a")])
    assert jobs[1].gpus == (1,)


def test_whole_runs_keep_jobs_apart_across_nodes_but_fill_a_node_first_gpu_first():
    """Cost picks the node; the node's first GPU that fits takes the job (the reference's first fit): two GPUs on
    two nodes keep two jobs apart, two GPUs on one node put both on GPU 0."""
    rows = [(1, 0.0, 100.0, 1, "a"), (2, 0.0, 100.0, 1, "c")]
    truth = world({w: 1 * GIB for w in NAMES})
    apart = simulate(trace(rows), truth, policies.get("horus"), ClusterSpec((("v100", 2),), gpus_per_node=1),
                     utils(a=0.1, c=0.1))
    assert apart.jobs["colocated_time"].eq(0).all()
    packed = simulate(trace(rows), truth, policies.get("horus"), ClusterSpec((("v100", 2),), gpus_per_node=2),
                      utils(a=0.1, c=0.1))
    assert packed.jobs["colocated_time"].gt(0).all()


def test_the_queue_is_ordered_by_predicted_utilization_and_the_least_is_placed():
    """Queue utilizations [0.9, 0.2, 0.5] (submitted in that order), one free slot: the 0.2 job is placed."""
    truth = world({w: 1 * GIB for w in NAMES})
    spec = ClusterSpec((("v100", 1),), max_jobs_per_gpu=2)
    view, jobs = round_of(truth, utils(a=0.9, b=0.2, c=0.5, x=0.3), spec, [(0, "x", (0,))],
                          [(1, "a"), (2, "b"), (3, "c")])
    assert jobs[2].gpus == (0,)
    assert jobs[1].state == jobs[3].state == QUEUED
    assert [j.job_id for j in view.queue.first(5)] == [3, 1]  # 0.5 before 0.9


def test_only_the_first_five_by_utilization_are_looked_at():
    """Six jobs waiting; only the sixth (highest utilization) fits next to the resident: nothing is placed."""
    truth = world({w: 1 * GIB for w in NAMES}, infeasible=[("a", "x"), ("b", "x")])
    spec = ClusterSpec((("v100", 1),), max_jobs_per_gpu=3)
    queued = [(1, "a"), (2, "b"), (3, "a"), (4, "b"), (5, "a"), (6, "c")]
    view, jobs = round_of(truth, utils(a=0.1, b=0.2, c=0.9, x=0.3), spec, [(0, "x", (0,))], queued)
    assert all(jobs[i].state == QUEUED for i, _ in queued)
    view, jobs = round_of(truth, utils(a=0.1, b=0.2, c=0.9, x=0.3), spec, [(0, "x", (0,))], queued,
                          policies.get("horus", lookahead=6))
    assert jobs[6].gpus == (0,)


def test_a_fourth_job_on_a_gpu_is_refused_on_a_cluster_that_allows_four():
    truth = world({w: 1 * GIB for w in NAMES})
    spec = ClusterSpec((("v100", 1),), max_jobs_per_gpu=4)
    view, jobs = round_of(truth, utils(), spec, [(0, "x", (0,)), (1, "a", (0,))], [(2, "b"), (3, "c")])
    assert len(view.cluster.residents[0]) == 3
    assert jobs[3].state == QUEUED or jobs[2].state == QUEUED


@pytest.mark.parametrize("left, shares", [(HEADROOM_BYTES, False), (HEADROOM_BYTES - 2 ** 20, False),
                                          (HEADROOM_BYTES + 2 ** 20, True)])
def test_a_job_that_leaves_500_mib_or_less_free_is_refused(left, shares):
    each = (V100 - left) / 2
    truth = world({w: each for w in NAMES})
    spec = ClusterSpec((("v100", 1),), max_jobs_per_gpu=3)
    view, jobs = round_of(truth, utils(), spec, [(0, "x", (0,))], [(1, "a")])
    assert (jobs[1].gpus == (0,)) is shares


def test_unknown_memory_leaves_the_fit_to_the_measured_pairs():
    truth = world(None, infeasible=[("a", "x")])
    spec = ClusterSpec((("v100", 1),), max_jobs_per_gpu=3)
    view, jobs = round_of(truth, utils(a=0.1, b=0.2), spec, [(0, "x", (0,))], [(1, "a"), (2, "b")])
    assert jobs[1].state == QUEUED and jobs[2].gpus == (0,)


def test_the_node_of_least_cost_first_then_its_first_gpu_that_fits():
    """Node 0 (GPUs 0, 1) holds c on both; node 1 (GPUs 2, 3) holds c on GPU 2, GPU 3 idle. The idle GPU makes
    node 1 the cheapest node; its first GPU that fits is GPU 2, next to c (not the idle GPU 3)."""
    truth = world({w: 1 * GIB for w in NAMES})
    spec = ClusterSpec((("v100", 4),), gpus_per_node=2, max_jobs_per_gpu=3)
    residents = [(0, "c", (0,)), (1, "c", (1,)), (2, "c", (2,))]
    view, jobs = round_of(truth, utils(a=0.3, c=0.6), spec, residents, [(3, "a")])
    assert jobs[3].gpus == (2,)


def test_the_node_choice_follows_the_least_cost_not_the_lowest_node():
    """Node 0's GPUs hold a heavy job each (0.9 + 0.9: 80% over), node 1's a light one each (0.1 + 0.9: full):
    node 1 costs less."""
    truth = world({w: 1 * GIB for w in NAMES})
    spec = ClusterSpec((("v100", 4),), gpus_per_node=2, max_jobs_per_gpu=3)
    residents = [(0, "c", (0,)), (1, "c", (1,)), (2, "b", (2,)), (3, "b", (3,))]
    view, jobs = round_of(truth, utils(a=0.9, b=0.1, c=0.9), spec, residents, [(4, "a")])
    assert jobs[4].gpus == (2,)


def test_a_job_of_several_gpus_takes_idle_gpus_on_fewest_nodes():
    truth = world({w: 1 * GIB for w in NAMES})
    spec = ClusterSpec((("v100", 4),), gpus_per_node=2, max_jobs_per_gpu=3)
    profile = Profile.of(truth)
    policy = policies.get("horus")
    view = SchedulerView.for_policy(policy, spec, profile, utils())
    jobs = traces.jobs_from_trace(trace([(0, 0.0, 10.0, 1, "x"), (1, 1.0, 10.0, 2, "a")]), profile, spec)
    for job in jobs.values():
        job.state = QUEUED
        view.queue.push(job)
    view.place(jobs[0], (0,))
    policy.reset(view)
    policy.schedule(view)
    assert jobs[1].gpus == (2, 3)
