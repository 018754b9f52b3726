"""The fast placement indexes decide exactly as the slow reference (tests/reference_sim, commit 1487f24).

Every policy of the reference runs twice on the same trace: once as coloc.policies has it on
coloc.sim.cluster.Cluster, coloc.sim.queue.JobQueue and coloc.sim.predictions.Predictions, once as the reference
copy on the reference Cluster (which scans every GPU), the reference queue (one sorted list of entries, walked from
its start for every question) and the reference's lookups of the same predicted values. The per-job results (start,
finish, queueing, co-location, device) and the whole sequence of placements (job, GPUs) must be equal, bit for bit.
"""
import numpy as np
import pandas as pd
import pytest
import reference_sim.base as reference
from reference_sim.cluster import Cluster as ReferenceCluster
from reference_sim.predictions import Predictions as ReferencePredictions
from reference_sim.queue import JobQueue as ReferenceQueue
from sim_cases import ABC, predictions, trace, truth_abc

from coloc import datasets, policies
from coloc.sim import ClusterSpec, GroundTruth, Predictions, Simulator, traces, view

NAMES = reference.names()


def perturbed(truth: GroundTruth, seed: int = 0) -> Predictions:
    """Predictions that are not the truth: each measured pair's norm off by up to +-25 %, with a spread, and utils."""
    rng = np.random.default_rng(seed)
    norms, stds = {}, {}
    for key, value in sorted(truth.pair_norms().items()):
        norms[key] = float(min(1.0, max(0.01, value * rng.uniform(0.75, 1.25))))
        stds[key] = float(rng.uniform(0.0, 0.1))
    utils = {key: float(rng.uniform(0.2, 1.0)) for key in sorted(truth.solo_throughputs())}
    return Predictions(norms, stds, utils, source="test: perturbed measured pairs")


def run(name: str, make, trace_table, truth, spec, preds, restart_cost_s, monkeypatch, reference=False):
    """(jobs table, timeline, [(job_id, gpus)] in placement order) of one run; `reference`: on the reference's
    cluster and queue, its policies reading the reference's lookups of `preds`' values."""
    with monkeypatch.context() as patch:
        if reference:
            patch.setattr(view, "Cluster", lambda spec, sharing=True: ReferenceCluster(spec))  # (it always indexes)
            patch.setattr(view, "JobQueue", ReferenceQueue)
            preds = ReferencePredictions.copy_of(preds)
        policy = make(name, truth=truth) if "truth" in policies.info(name)["needs"] else make(name)
        sim = Simulator(trace_table, truth, policy, spec, preds, restart_cost_s)
        placed, add = [], sim.view.cluster.add
        sim.view.cluster.add = lambda job, gpus: (placed.append((job.job_id, tuple(gpus))), add(job, gpus))
        result = sim.run()
    return result.jobs.drop(columns="policy"), result.timeline, placed


def assert_same(name, trace_table, truth, spec, preds, monkeypatch, restart_cost_s=30.0):
    fast = run(name, policies.get, trace_table, truth, spec, preds, restart_cost_s, monkeypatch)
    slow = run(name, reference.get, trace_table, truth, spec, preds, restart_cost_s, monkeypatch, reference=True)
    assert fast[2] == slow[2], f"{name}: placements differ"
    pd.testing.assert_frame_equal(fast[0], slow[0], check_exact=True)
    pd.testing.assert_frame_equal(fast[1], slow[1], check_exact=True)
    return fast


def test_reference_covers_every_policy_of_the_reference_commit():
    assert set(NAMES) <= set(policies.names())
    assert {"fifo", "sjf", "tiresias", "gandiva", "horus", "isacpp", "coloc", "coloc-fifo", "oracle"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_hand_made_cases_decide_as_the_reference(name, monkeypatch):
    truth = truth_abc()
    preds = predictions(ABC, stds={("a", "b"): (0.05, 0.1)}, utils={"a": 0.5, "b": 0.7, "c": 0.3})
    rows = [(i, 10.0 * (i // 3), 100.0 + 37.0 * (i % 7), 1 if i % 5 else 2, "abc"[i % 3]) for i in range(60)]
    for cap in (2, 3):
        spec = ClusterSpec((("v100", 4),), gpus_per_node=2, max_jobs_per_gpu=cap)
        assert_same(name, trace(rows), truth, spec, preds, monkeypatch)


@pytest.fixture(scope="module")
def gavel_case(gavel):
    solo, pairs = gavel
    truth = GroundTruth(solo, pairs, "v100")
    workloads = truth.workloads("v100")
    table = traces.poisson(800, workloads, seed=3, load=2.0, total_gpus=40, gpu_mix={1: 8, 2: 1, 4: 1})
    return truth, perturbed(truth), table


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("devices, cap", [((("v100", 40),), 2), ((("v100", 16), ("p100", 16), ("k80", 8)), 2),
                                          ((("v100", 40),), 3)])
def test_gavel_poisson_decides_as_the_reference(name, devices, cap, gavel_case, monkeypatch):
    truth, preds, table = gavel_case
    jobs, _, placed = assert_same(name, table, truth, ClusterSpec(devices, max_jobs_per_gpu=cap), preds, monkeypatch)
    assert len(placed) >= len(table)
    if name not in ("fifo", "fifo-blocking", "sjf", "tiresias"):
        assert (jobs["colocated_time"] > 0).any(), f"{name}: nothing shared, the packing paths went untested"


@pytest.mark.parametrize("name", NAMES)
def test_few_job_types_on_many_gpus_decide_as_the_reference(name, gavel, monkeypatch):
    """Three job types on 96 GPUs: groups of dozens of GPUs, where a search that stops early shows."""
    solo, pairs = gavel
    truth = GroundTruth(solo, pairs, "v100")
    table = traces.poisson(900, ["resnet18-cifar10-b16", "lm-wikitext2-b5", "recommendation-ml20m-b512"], seed=5, load=2.5,
                           total_gpus=96, gpu_mix={1: 1.0})
    jobs, _, _ = assert_same(name, table, truth, ClusterSpec((("v100", 96),)), perturbed(truth, 1), monkeypatch)
    if name not in ("fifo", "fifo-blocking", "sjf", "tiresias"):
        assert (jobs["colocated_time"] > 0).sum() > 100


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_philly_10000_jobs_decide_as_the_reference(name, raw_files, gavel, monkeypatch):
    solo, pairs = gavel
    truth = GroundTruth(solo, pairs, "v100")
    philly = datasets.trace_from_philly(raw_files["philly_trace"], solo, assign="uniform", seed=0,
                                        reference_device="v100")
    part = traces.select(philly, n_jobs=10_000, max_gpus=128)
    jobs, _, _ = assert_same(name, part, truth, ClusterSpec((("v100", 128),)), perturbed(truth), monkeypatch)
    assert len(jobs) == 10_000


@pytest.mark.parametrize("name", ["isacpp"])
def test_pairs_that_do_not_interfere_decide_as_the_reference(name, gavel, monkeypatch):
    """Job types measured at normalized throughput 1.0 together: ISACPP's score is still strictly monotone on each
    piece (its contention is positive), and the search finds what scoring every GPU finds."""
    solo, pairs = gavel
    truth = GroundTruth(solo, pairs, "v100")
    kinds = ["resnet18-cifar10-b16", "resnet18-cifar10-b32", "recommendation-ml20m-b512"]
    assert all(truth.pair_norm("v100", a, b) == 1.0 for a in kinds[:2] for b in kinds)
    preds = Predictions.from_truth(truth)
    table = traces.poisson(1500, kinds, seed=2, load=2.5, total_gpus=128, gpu_mix={1: 1.0})
    jobs, _, _ = assert_same(name, table, truth, ClusterSpec((("v100", 128),)), preds, monkeypatch)
    assert (jobs["colocated_time"] > 0).sum() > 100


@pytest.mark.parametrize("name", ["isacpp"])
@pytest.mark.parametrize("cap", [2, 3, 4])
def test_isacpp_with_memory_requests_decides_as_the_reference(name, cap, gavel, monkeypatch):
    """Caps of 2 to 4 jobs per GPU, with job memory requests that bind (2 to 9 GB on 16 GB V100s): ISACPP has no
    cap of its own, memory decides below the cluster's."""
    solo, pairs = gavel
    solo = solo.assign(mem_bytes=[(2 + (7 * i) % 8) * 2.0 ** 30 for i in range(len(solo))])
    truth = GroundTruth(solo, pairs, "v100")
    table = traces.poisson(700, truth.workloads("v100"), seed=4, load=3.0, total_gpus=24, gpu_mix={1: 8, 2: 1})
    jobs, _, _ = assert_same(name, table, truth, ClusterSpec((("v100", 24),), max_jobs_per_gpu=cap),
                             perturbed(truth, 2), monkeypatch)
    assert (jobs["colocated_time"] > 0).any()


@pytest.mark.parametrize("devices, cap", [((("v100", 40),), 3), ((("v100", 16), ("p100", 16), ("k80", 8)), 4)])
def test_horus_with_declared_memory_decides_as_the_reference(devices, cap, gavel, monkeypatch):
    """Declared peak memory per job type (1-9 GiB, drawn): the memory term and the 500 MiB rule in play."""
    solo, pairs = gavel
    rng = np.random.default_rng(4)
    mem = {w: float(rng.uniform(1.0, 9.0)) * 2 ** 30 for w in sorted(solo["workload"].unique())}
    truth = GroundTruth(solo.assign(mem_bytes=solo["workload"].map(mem)), pairs, "v100", memory_source="test")
    table = traces.poisson(800, truth.workloads("v100"), seed=3, load=2.0, total_gpus=40, gpu_mix={1: 8, 2: 1, 4: 1})
    jobs, _, _ = assert_same("horus", table, truth, ClusterSpec(devices, gpus_per_node=4, max_jobs_per_gpu=cap),
                             perturbed(truth), monkeypatch)
    assert (jobs["colocated_time"] > 0).any()
