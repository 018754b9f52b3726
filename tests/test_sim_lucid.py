"""The simulator on Lucid's RTX 3090 data: its measured pairs are the truth, its unmeasured pairs never share, and
the measured GPU utilization over time is what nvidia-smi showed (solo for one job, the pair's for two)."""
import math

import numpy as np
import pandas as pd
import pytest
from sim_cases import Scripted, trace

from coloc import policies
from coloc.datasets import lucid
from coloc.sim import ClusterSpec, GroundTruth, simulate
from coloc.sim.metrics import summarize, utilization_series
from coloc.studies import experiment, scenarios

ONE_3090 = ClusterSpec((("rtx3090", 1),))
SETTINGS = {"reference_device": "v100", "max_jobs_per_gpu": 4, "restart_cost_s": 30.0, "protocol": "lofo",
            "predictor_norm": "egat", "predictor_util": "horus", "util_bin_s": 3600.0}


@pytest.fixture(scope="module")
def tables(raw_files):
    return lucid.load_lucid(raw_files["lucid_pairs"], raw_files["lucid_solo"])


@pytest.fixture(scope="module")
def truth(tables):
    return GroundTruth(*tables, "rtx3090", name=experiment.truth_name("lucid"))


def hand_tables():
    """One RTX 3090, job types a (solo 40% busy) and b (solo 70%), the pair a+b measured at 90%; b+b unmeasured."""
    solo = pd.DataFrame({"device": "rtx3090", "workload": ["a", "b"], "throughput": [10.0, 10.0],
                         "gpu_util": [40.0, 70.0]})
    pairs = pd.DataFrame([{"device": "rtx3090", "workload_a": "a", "workload_b": "b", "tput_a": 5.0, "tput_b": 8.0,
                           "norm_a": 0.5, "norm_b": 0.8, "feasible": True, "pair_gpu_util": 90.0},
                          {"device": "rtx3090", "workload_a": "a", "workload_b": "a", "tput_a": 6.0, "tput_b": 6.0,
                           "norm_a": 0.6, "norm_b": 0.6, "feasible": True, "pair_gpu_util": 55.0}])
    return solo, pairs


def test_the_truth_of_a_3090_pair_is_lucids_measured_pair(tables, truth):
    _, pairs = tables
    row = pairs.iloc[len(pairs) // 2]
    a, b = row["workload_a"], row["workload_b"]
    assert truth.pair_norm("rtx3090", a, b) == pytest.approx(row["norm_a"])
    assert truth.pair_norm("rtx3090", b, a) == pytest.approx(row["norm_b"])
    assert truth.gpu_util("rtx3090", [b, a]) == pytest.approx(row["pair_gpu_util"] / 100)
    # a simulated pair runs at those rates: job 1 (a) and 2 (b) share the GPU from t = 0
    duration = 100.0
    result = simulate(trace([(1, 0.0, duration, 1, a), (2, 0.0, 10 * duration, 1, b)]), truth,
                      Scripted({1: (0,), 2: (0,)}), ONE_3090, check_every=1)
    assert result.jobs.set_index("job_id").loc[1, "jct"] == pytest.approx(duration / row["norm_a"])


def test_an_unmeasured_pair_never_shares_and_is_not_predicted(tables, truth):
    solo, pairs = tables
    missing = lucid.unmeasured_pairs(pairs, solo)
    assert len(missing) == 208
    a, b = missing.iloc[0][["workload_a", "workload_b"]]
    assert not truth.pair_feasible("rtx3090", a, b)  # the world refuses the set: no truth to replay
    assert math.isnan(truth.gpu_util("rtx3090", [a, b]))
    with pytest.raises(KeyError, match="no row"):
        truth.pair_norm("rtx3090", a, b)
    # a policy is told only that the two may not share (as for a pair that does not fit): placing them together fails
    with pytest.raises(RuntimeError, match="infeasible"):
        simulate(trace([(1, 0.0, 100.0, 1, a), (2, 0.0, 100.0, 1, b)]), truth, Scripted({1: (0,), 2: (0,)}),
                 ONE_3090)
    # and a sharing policy (gandiva) runs them one after the other
    result = simulate(trace([(1, 0.0, 100.0, 1, a), (2, 0.0, 100.0, 1, b)]), truth, policies.get("gandiva"), ONE_3090)
    assert result.jobs["colocated_time"].sum() == 0.0 and result.jobs["jct"].max() == pytest.approx(200.0)


def test_traces_draw_only_job_types_measured_in_pairs(tables, truth):
    solo, pairs = tables
    drawn = experiment.cluster_workloads(truth, ONE_3090, "rtx3090")
    in_pairs = set(pairs["workload_a"]) | set(pairs["workload_b"])
    assert set(drawn) == in_pairs and len(drawn) == 56  # BERT, ResNet-50, Transformer (solo only) left out
    assert any(w.startswith("neumf") for w in drawn)  # NeuMF stays: it shares with NeuMF, its measured pairs


def test_measured_utilization_is_solo_for_one_job_and_the_pairs_for_two():
    # a (100 s) alone 0-10 s, then a+b together until b ends, then a alone again
    truth = GroundTruth(*hand_tables(), "rtx3090")
    result = simulate(trace([(1, 0.0, 100.0, 1, "a"), (2, 10.0, 40.0, 1, "b")]), truth,
                      Scripted({1: (0,), 2: (0,)}), ONE_3090, check_every=1)
    # b needs 40 / 0.8 = 50 s (10 to 60 s); a does 10 + 25 by then and 65 alone: ends at 125 s
    line = result.timeline.set_index("time")["measured_util_gpus"]
    assert line.loc[0.0] == pytest.approx(0.4) and line.loc[10.0] == pytest.approx(0.9)
    assert line.loc[60.0] == pytest.approx(0.4) and line.loc[125.0] == 0.0
    summary = summarize(result, 1)
    assert summary["measured_util_mean"] == pytest.approx((10 * 0.4 + 50 * 0.9 + 65 * 0.4) / 125)
    assert summary["measured_util_busy"] == pytest.approx(summary["measured_util_mean"])  # busy the whole run
    series = utilization_series(result.timeline, 1, 60.0)
    assert series["measured_util"].tolist() == pytest.approx([(10 * 0.4 + 50 * 0.9) / 60, 0.4, 5 * 0.4 / 60])
    assert series["gpu_util"].iloc[0] == pytest.approx(1.0)  # busy the whole first bin, whatever nvidia-smi says


def test_without_measured_utilization_the_column_is_nan():
    solo, pairs = hand_tables()
    truth = GroundTruth(solo.drop(columns="gpu_util"), pairs.drop(columns="pair_gpu_util"), "rtx3090")
    assert not truth.measures_util
    result = simulate(trace([(1, 0.0, 100.0, 1, "a")]), truth, policies.get("fifo"), ONE_3090)
    assert result.timeline["measured_util_gpus"].isna().all()
    assert math.isnan(summarize(result, 1)["measured_util_mean"])
    assert utilization_series(result.timeline, 1, 60.0)["measured_util"].isna().all()


def test_three_jobs_on_a_gpu_have_no_measured_utilization():
    truth = GroundTruth(*hand_tables(), "rtx3090")
    assert math.isnan(truth.gpu_util("rtx3090", ["a", "a", "b"]))
    spec = ClusterSpec((("rtx3090", 1),), max_jobs_per_gpu=3)
    result = simulate(trace([(1, 0.0, 100.0, 1, "a"), (2, 0.0, 100.0, 1, "a"), (3, 0.0, 100.0, 1, "b")]), truth,
                      Scripted({1: (0,), 2: (0,), 3: (0,)}), spec)
    assert math.isnan(summarize(result, 1)["measured_util_mean"])


def test_a_lucid_scenario_runs_on_the_3090_with_its_own_settings(tables):
    solo, pairs = tables
    spec = {"dataset": "lucid", "trace": {"source": "testbed", "n_jobs": 12, "group_size": 3,
                                          "median_duration_s": 60, "duration_sigma": 1.0},
            "cluster": "rtx3090:4", "gpus_per_node": 4, "policies": ["gandiva"], "seeds": [0],
            "sweep": {"interval_s": [0]}, "headline": 0, "max_jobs_per_gpu": 2, "util_bin_s": 60.0}
    out = scenarios.run_policy("t", "gandiva", spec, SETTINGS, solo, pairs, None, log=lambda _: None)
    row = out["summary"].iloc[0]
    assert (row["dataset"], row["reference_device"], row["max_jobs_per_gpu"]) == ("lucid", "rtx3090", 2)
    assert 0 < row["measured_util_mean"] < row["gpu_util_mean"] + 1e-9
    assert np.isfinite(out["utilization"]["measured_util"]).all()
    with pytest.raises(ValueError, match="expected one of"):
        scenarios.dataset_of({**spec, "dataset": "philly"})
