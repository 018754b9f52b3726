"""The whole Philly trace through the simulator: invariants hold, the jobs table follows its contract."""
import pandas as pd
import pytest

from coloc import datasets, policies
from coloc.sim import ClusterSpec, GroundTruth, Predictions, simulate
from coloc.sim.metrics import summarize

JOBS_CONTRACT = ["job_id", "policy", "submit_time", "start_time", "finish_time", "jct", "queue_delay",
                 "num_gpus", "workload", "colocated_time", "slowdown"]


@pytest.fixture(scope="module")
def philly(raw_files, gavel):
    solo, pairs = gavel
    trace = datasets.trace_from_philly(raw_files["philly_trace"], solo, assign="uniform", seed=0,
                                       reference_device="v100")
    return GroundTruth(solo, pairs, "v100"), trace


@pytest.mark.slow
@pytest.mark.parametrize("name, gpus", [("fifo", 2048), ("isacpp", 2048)])
def test_whole_philly_trace_keeps_every_invariant(philly, name, gpus):
    truth, trace = philly
    # isacpp is fed the measured pairs here: this test checks the simulator, not the predictor
    preds = Predictions.from_truth(truth)
    result = simulate(trace, truth, policies.get(name), ClusterSpec((("v100", gpus),)), preds,
                      check_every=20000)  # the final checks run on every simulation
    jobs = result.jobs
    assert len(jobs) == len(trace) == 82247 and jobs["job_id"].is_unique
    assert list(jobs.columns[: len(JOBS_CONTRACT)]) == JOBS_CONTRACT
    assert (jobs["finish_time"] >= jobs["submit_time"] + jobs["duration"] - 1e-6).all()
    summary = summarize(result, gpus)
    assert 0 < summary["gpu_util_mean"] <= 1 and summary["jct_p99"] >= summary["jct_median"]


@pytest.mark.slow
def test_partial_philly_trace_packs_under_pressure(philly):
    truth, trace = philly
    part = trace.head(6000)
    spec = ClusterSpec((("v100", 96),))
    preds = Predictions.from_truth(truth)
    results = {name: simulate(part, truth, policies.get(name), spec, preds, restart_cost_s=30.0, check_every=500)
               for name in ("fifo", "isacpp", "gandiva", "coloc")}
    share = {name: summarize(r, 96)["colocated_share"] for name, r in results.items()}
    assert share["fifo"] == 0 and share["isacpp"] > 0 and share["gandiva"] > 0 and share["coloc"] > 0
    fifo = results["fifo"].jobs["queue_delay"].mean()
    assert results["isacpp"].jobs["queue_delay"].mean() < fifo
    pd.testing.assert_series_equal(results["fifo"].jobs["job_id"], results["coloc"].jobs["job_id"])
