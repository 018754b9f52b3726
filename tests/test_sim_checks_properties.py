"""Property-based: random valid traces keep the simulator's invariants; bad ones are refused up front."""
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from sim_cases import ABC, predictions, trace, truth_abc

from coloc import policies
from coloc.sim import ClusterSpec, Simulator, simulate
from coloc.sim.metrics import time_integral
from coloc.studies.experiment import make_policy

SPEC = ClusterSpec((("v100", 4),), gpus_per_node=2)
PREDS = predictions(ABC, utils={"a": 0.3, "b": 0.5, "c": 0.6})
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def valid_traces(draw, max_jobs: int = 10):
    n = draw(st.integers(1, max_jobs))
    ids = draw(st.lists(st.integers(0, 10_000), min_size=n, max_size=n, unique=True))
    times = st.one_of(st.integers(0, 300).map(float), st.floats(0, 300, allow_nan=False))  # ties included
    rows = [(job_id, draw(times), draw(st.floats(1.0, 200.0)), draw(st.sampled_from([1, 1, 1, 2, 4])),
             draw(st.sampled_from("abc"))) for job_id in ids]
    return trace(rows)


@FAST
@given(jobs=valid_traces(), name=st.sampled_from(policies.names()), restart=st.sampled_from([0.0, 3.0]))
def test_random_valid_traces_keep_the_invariants(jobs, name, restart):
    truth = truth_abc()
    # the simulator's own checks (work conserved, every job done once, indexes agree) run every round
    result = simulate(jobs, truth, make_policy(name, truth), SPEC, PREDS, restart_cost_s=restart, check_every=1)
    out = result.jobs.set_index("job_id")
    assert sorted(out.index) == sorted(jobs["job_id"])
    given_rows = jobs.set_index("job_id").loc[out.index]
    assert (out["submit_time"] == given_rows["submit_time"]).all() and (out["num_gpus"] == given_rows["num_gpus"]).all()
    assert (out["start_time"] >= out["submit_time"]).all()
    assert (out["jct"] >= given_rows["duration"] * (1 - 1e-9)).all()  # speed 1 on v100, factor <= 1
    assert np.allclose(out["queue_delay"] + out["run_time"], out["jct"], rtol=1e-9, atol=1e-6)
    assert (out["colocated_time"] <= out["run_time"] * (1 + 1e-9) + 1e-9).all()
    busy = time_integral(result.timeline, "busy_gpus", float(out["finish_time"].max()))
    assert busy <= float((out["run_time"] * out["num_gpus"]).sum()) * (1 + 1e-9) + 1e-6


BAD_VALUES = {
    "job_id": [2.5, True, math.nan, "x"],
    "submit_time": [math.inf, -1.0, math.nan, True, "0"],
    "duration": [math.inf, math.nan, 0.0, -5.0, True, False],
    "num_gpus": [1.7, 0, -1, True, math.nan],
}


@FAST
@given(jobs=valid_traces(), data=st.data())
def test_random_invalid_traces_are_refused_up_front_naming_the_job(jobs, data):
    column = data.draw(st.sampled_from(sorted(BAD_VALUES)))
    value = data.draw(st.sampled_from(BAD_VALUES[column]))
    row = data.draw(st.integers(0, len(jobs) - 1))
    values = list(jobs[column])
    values[row] = value
    bad = jobs.assign(**{column: pd.Series(values, dtype=object)})
    where = f" row {row}:" if column == "job_id" else f": job {jobs['job_id'].iloc[row]} (row {row}):"
    with pytest.raises(ValueError) as refused:
        Simulator(bad, truth_abc(), policies.get("fifo"), SPEC)  # refused when built, before any event
    assert f"trace table{where} {column} {value!r}; expected" in str(refused.value)


@pytest.mark.parametrize("rows, message", [
    ([(0, 0.0, 10.0, 1, "a"), (1, 0.0, 10.0, 1, "a"), (2.5, 0.0, 10.0, 1, "a"), (2, 0.0, 10.0, 1, "a")],
     r"row 2: job_id 2\.5; expected an integer"),          # was: 4 jobs in, 3 out
    ([(0, 0.0, 10.0, 1.7, "a")], r"job 0 \(row 0\): num_gpus 1\.7; expected an integer >= 1"),  # was: 1 GPU
    ([(0, 0.0, True, 1, "a")], r"job 0 \(row 0\): duration True; expected seconds in \[0\.001, 1e\+12\]"),  # was: 1 s
    ([(0, 0.0, math.inf, 1, "a")], r"job 0 \(row 0\): duration inf"),          # was: an inf JCT
    ([(0, 0.0, 1.0, 1, "a"), (1, math.inf, 1.0, 1, "a")], r"job 1 \(row 1\): submit_time inf"),  # was: 'work conservation broken'
    ([], r"trace table: no jobs"),                          # was: IndexError in summarize
])
def test_the_bad_traces_of_issue_16_are_refused(rows, message):
    with pytest.raises(ValueError, match=message):
        simulate(trace(rows), truth_abc(), policies.get("fifo"), SPEC)


def test_whole_number_ids_and_gpu_counts_given_as_floats_are_taken():
    result = simulate(trace([(0.0, 0.0, 10.0, 2.0, "a"), (1.0, 5.0, 10.0, 1.0, "b")]), truth_abc(),
                      policies.get("fifo"), SPEC)
    assert list(result.jobs["job_id"]) == [0, 1] and list(result.jobs["num_gpus"]) == [2, 1]
