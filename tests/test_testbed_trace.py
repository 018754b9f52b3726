"""The testbed's trace: seconds of training turned into whole iterations, the same for a seed."""
import pytest
from test_testbed_runner import A, B

from coloc.testbed import trace


def test_the_trace_turns_seconds_into_whole_iterations_the_same_for_a_seed():
    made = trace.make([A, B], 6, {A: 4.0, B: 2.0}, 1.0, 4.0, seed=3)
    assert made.equals(trace.make([A, B], 6, {A: 4.0, B: 2.0}, 1.0, 4.0, seed=3))
    assert sorted(made["workload"].value_counts().tolist()) == [3, 3] and (made["submit_time"] == 0).all()
    rate = made["workload"].map({A: 4.0, B: 2.0})
    assert (made["duration"] == made["iterations"] / rate).all()
    assert made["duration"].between(1.0 - 0.5 / 2.0, 4.0 + 0.5 / 2.0).all()  # rounding: half an iteration
    with pytest.raises(ValueError, match=r"job types \['x'\] have no solo throughput"):
        trace.make([A, "x"], 2, {A: 1.0}, 1.0, 2.0)
