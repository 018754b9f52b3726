"""The simulator's API refuses numbers that would make results wrong, naming the value and the range allowed.

Each case ran before these refusals and gave a wrong result, a hang or an unrelated error (noted beside it); the
Hypothesis tests draw out-of-range values for each argument.
"""
import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from sim_cases import ABC, Scripted, tables, trace, truth_abc

from coloc import policies
from coloc.policies.base import Policy
from coloc.sim import ClusterSpec, GroundTruth, Predictions, SimulationError, simulate
from coloc.studies import experiment

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TWO = ClusterSpec((("v100", 2),), gpus_per_node=2)
ONE_JOB = [(1, 0.0, 10.0, 1, "a")]


def out_of(low: float, high: float, low_open: bool = False):
    """Floats outside [low, high] ((low, high] when low_open), NaN and infinities included."""
    below = st.floats(max_value=low, allow_nan=False) if low_open else st.floats(max_value=low, exclude_max=True,
                                                                                  allow_nan=False)
    above = st.floats(min_value=high, exclude_min=True)
    return st.one_of(below, above, st.just(math.nan), st.just(math.inf), st.just(-math.inf))


def with_norm(value: float) -> tuple:
    norms = dict(ABC)
    norms[("a", "b")] = (value, 0.5)
    return tables(norms)


# ----- the truth's pair norms ---------------------------------------------------------------------

def test_a_pair_norm_of_50_is_refused():  # was: a 100 s job next to b finished in 2 s
    with pytest.raises(ValueError, match=r"pairs table row 1: feasible pair 'a'/'b' on 'v100' has norms \(50.0, 0.5\); "
                                         r"expected normalized throughputs in \(0, 2\]"):
        GroundTruth(*with_norm(50.0), "v100")


@FAST
@given(value=out_of(0.0, 2.0, low_open=True))
def test_any_pair_norm_outside_0_2_is_refused(value):
    with pytest.raises(ValueError, match=r"has norms \(.*\); expected normalized throughputs in \(0, 2\]"):
        GroundTruth(*with_norm(value), "v100")


def test_lucids_largest_measured_norm_is_accepted():
    assert GroundTruth(*with_norm(1.498), "v100").pair_norm("v100", "a", "b") == 1.498


# ----- predictions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [math.nan, -1.0, 1e9])  # was: coloc ran on them
def test_predictions_of_nan_negative_or_absurd_norms_are_refused(value):
    norms = {("v100", "a", "b"): value, ("v100", "b", "a"): 0.5}
    with pytest.raises(ValueError, match=rf"predictions \(t\): normalized throughput of \('v100', 'a', 'b'\) is "
                                         rf"{value!r}; expected a finite number in \(0, 2\]"):
        Predictions(norms, source="t")


@FAST
@given(norm=out_of(0.0, 2.0, low_open=True), util=out_of(0.0, 2.0), std=st.floats(max_value=0, exclude_max=True))
def test_predictions_out_of_range_are_refused_each_argument(norm, util, std):
    key = ("v100", "a", "b")
    with pytest.raises(ValueError, match=r"normalized throughput of .* expected a finite number in \(0, 2\]"):
        Predictions({key: norm}, source="t")
    with pytest.raises(ValueError, match=r"utilization of .* expected a finite number in \[0, 2\]"):
        Predictions({key: 0.5}, utils={("v100", "a"): util}, source="t")
    with pytest.raises(ValueError, match=r"spread of .* expected a finite number in \[0, inf\]"):
        Predictions({key: 0.5}, stds={key: std}, source="t")


# ----- the trace's numbers -------------------------------------------------------------------------

@pytest.mark.parametrize("rows, message", [
    ([(1e19, 0.0, 10.0, 1, "a")], r"row 0: job_id 1e\+19; expected an integer in int64's range"),  # was: id -2**63
    ([(2.0 ** 60, 0.0, 10.0, 1, "a")], r"job_id 1.152921504606847e\+18; expected an integer in int64's range"),
    ([(1, 1e17, 1.0, 1, "a")], r"job 1 \(row 0\): submit_time 1e\+17; expected seconds in \[0, 1e\+12\]"),  # was:
    # 'work conservation broken'
    ([(1, 0.0, 1e-320, 1, "a")], r"job 1 \(row 0\): duration 1e-320; expected seconds in \[0.001, 1e\+12\]"),  # was:
    # JCT 1e-320
])
def test_trace_numbers_out_of_range_are_refused(rows, message):
    with pytest.raises(ValueError, match=message):
        simulate(trace(rows), truth_abc(), policies.get("fifo"), TWO)


def test_an_unsigned_job_id_beyond_int64_is_refused():
    rows = trace(ONE_JOB).astype({"job_id": np.uint64})
    rows.loc[0, "job_id"] = np.uint64(2 ** 64 - 1)
    with pytest.raises(ValueError, match="job_id 18446744073709551615; expected an integer in int64's range"):
        simulate(rows, truth_abc(), policies.get("fifo"), TWO)


@FAST
@given(submit=out_of(0.0, 1e12), duration=out_of(1e-3, 1e12))
def test_any_submit_time_or_duration_out_of_range_is_refused(submit, duration):
    with pytest.raises(ValueError, match=r"submit_time .*; expected seconds in \[0, 1e\+12\]"):
        simulate(trace([(1, submit, 10.0, 1, "a")]), truth_abc(), policies.get("fifo"), TWO)
    with pytest.raises(ValueError, match=r"duration .*; expected seconds in \[0.001, 1e\+12\]"):
        simulate(trace([(1, 0.0, duration, 1, "a")]), truth_abc(), policies.get("fifo"), TWO)


@FAST
@given(job_id=st.one_of(st.floats(allow_nan=True).filter(lambda v: not (math.isfinite(v) and v.is_integer()
                                                                           and abs(v) < 2 ** 53))))
def test_any_job_id_not_an_exact_integer_is_refused(job_id):
    with pytest.raises(ValueError, match="job_id .*; expected an integer in int64's range"):
        simulate(trace([(job_id, 0.0, 10.0, 1, "a")]), truth_abc(), policies.get("fifo"), TWO)


# ----- the cluster, the policy's actions and its settings --------------------------------------------

def test_a_cluster_device_the_truth_lacks_is_refused_at_the_start():  # was: the h100s stayed idle, silently
    with pytest.raises(ValueError, match=r"device 'h100' has no measurements in the truth \(measured \(Gavel\)\); "
                                         r"expected devices among \['v100'\]"):
        simulate(trace(ONE_JOB), truth_abc(), policies.get("fifo"), ClusterSpec.parse("v100:1,h100:3"))


def test_a_run_config_with_a_device_the_truth_lacks_is_refused_naming_it():
    solo, pairs = tables(ABC)
    config = experiment.RunConfig("testbed", "fifo", 0, "v100:1,h100:3", gpus_per_node=4)
    with pytest.raises(ValueError, match=r"cluster 'v100:1,h100:3': device 'h100' has no measurements in the truth "
                                         r"\(measured \(Gavel\)\); expected devices among \['v100'\]"):
        experiment.run(config, {"source": "testbed", "n_jobs": 3}, solo, pairs, None)


@pytest.mark.parametrize("gpu", [1.7, True, "1", np.float64(1.0), np.bool_(True), None])  # was: GPU 1
def test_a_placement_on_a_gpu_that_is_not_an_integer_is_refused(gpu):
    with pytest.raises(SimulationError, match=f"job 1 placed on GPU {re.escape(repr(gpu))} .*; expected an integer GPU index"):
        simulate(trace(ONE_JOB), truth_abc(), Scripted({1: (gpu,)}), TWO)


def test_a_placement_on_a_numpy_integer_gpu_is_taken():
    jobs = simulate(trace(ONE_JOB), truth_abc(), Scripted({1: (np.int64(1),)}), TWO).jobs
    assert list(jobs["jct"]) == [10.0]


@FAST
@given(cost=out_of(0.0, 1e12))
def test_a_restart_cost_out_of_range_is_refused(cost):  # was: NaN and -50 accepted
    with pytest.raises(ValueError, match=r"restart_cost_s .*: expected seconds of solo progress in \[0, 1e\+12\]"):
        simulate(trace(ONE_JOB), truth_abc(), policies.get("fifo"), TWO, restart_cost_s=cost)


@pytest.mark.parametrize("thresholds", [(-1,), (0.0,), (3600.0, 3600.0), (36000.0, 3600.0), (math.nan,),
                                        (math.inf,), (True,), ("3600",)])
def test_tiresias_thresholds_not_positive_and_increasing_are_refused(thresholds):  # was: accepted (and sorted)
    with pytest.raises(ValueError, match=r"tiresias thresholds .*: expected finite, positive, strictly increasing"):
        policies.get("tiresias", thresholds=thresholds)


class Periodic(Policy):
    """Test helper: a custom policy with a period, placing each queued job on an idle GPU."""

    name = "periodic"

    def __init__(self, period_s):
        self.period_s = period_s

    def schedule(self, view) -> None:
        for job in list(view.queue):
            idle = [gpu for gpu, here in enumerate(view.cluster.residents) if not here]
            if idle:
                view.place(job, (idle[0],))


@pytest.mark.parametrize("period", [0.0, -1.0, 1e-300, math.nan, math.inf, True, "60"])  # was: a hang (0 ran
# here only because its rounds were never pushed; -1, 1e-300) or an IndexError (NaN, inf)
def test_a_period_that_would_hang_or_crash_the_run_is_refused(period):
    with pytest.raises(ValueError, match=rf"policy 'periodic': period_s {period!r}; expected None \(no periodic "
                                         r"rounds\) or a number of seconds in \[1, 1e\+12\]"):
        simulate(trace(ONE_JOB), truth_abc(), Periodic(period), TWO)


@FAST
@given(period=out_of(1.0, 1e12))
def test_any_period_out_of_range_is_refused(period):
    with pytest.raises(ValueError, match=r"period_s .*; expected None \(no periodic rounds\) or a number"):
        simulate(trace(ONE_JOB), truth_abc(), Periodic(period), TWO)


def test_a_period_in_range_runs():
    jobs = simulate(trace([(1, 0.0, 10.0, 1, "a"), (2, 0.0, 10.0, 1, "b"), (3, 0.0, 10.0, 1, "c")]), truth_abc(),
                    Periodic(1.0), TWO).jobs
    assert list(jobs["jct"]) == [10.0, 10.0, 20.0]
