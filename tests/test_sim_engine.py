"""The event engine: hand-computed JCTs, invariants that fail loudly, determinism."""
import pandas as pd
import pytest
from sim_cases import ABC, Scripted, tables, trace, truth_abc

from coloc import policies
from coloc.sim import ClusterSpec, GroundTruth, SimulationError, simulate
from coloc.sim.metrics import summarize, time_integral

ONE_GPU = ClusterSpec((("v100", 1),))


def jct(result) -> dict[int, float]:
    return dict(zip(result.jobs["job_id"], result.jobs["jct"], strict=True))


def test_one_gpu_two_jobs_exclusive_fifo_by_arithmetic():
    result = simulate(trace([(1, 0.0, 100.0, 1, "a"), (2, 10.0, 50.0, 1, "b")]), truth_abc(),
                      policies.get("fifo"), ONE_GPU)
    assert jct(result) == {1: 100.0, 2: 140.0}
    assert result.jobs.set_index("job_id").loc[2, "queue_delay"] == 90.0


def test_one_gpu_two_jobs_colocated_by_arithmetic():
    # a with b: a at 0.5, b at 0.8. At t=10 a has 90 left; b needs 50/0.8 = 62.5 s (ends t=72.5);
    # a does 31.25 meanwhile, then 58.75 alone: ends t=131.25.
    result = simulate(trace([(1, 0.0, 100.0, 1, "a"), (2, 10.0, 50.0, 1, "b")]), truth_abc(),
                      Scripted({1: (0,), 2: (0,)}), ONE_GPU, check_every=1)
    assert jct(result) == {1: 131.25, 2: 62.5}
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc[1, "colocated_time"] == 62.5 and jobs.loc[2, "colocated_time"] == 62.5
    summary = summarize(result, 1)
    assert summary["gpu_util_mean"] == pytest.approx(1.0)
    # effective GPUs: 10 s of a alone, 62.5 s at 0.5 + 0.8, 58.75 s of a alone
    assert summary["effective_throughput"] == pytest.approx((10 + 62.5 * 1.3 + 58.75) / 131.25)
    assert summary["colocated_share"] == pytest.approx(125 / (131.25 + 62.5))


def test_device_speed_scales_work():
    solo = pd.DataFrame({"device": ["v100", "k80"], "workload": ["a", "a"], "throughput": [20.0, 5.0]})
    pairs = pd.DataFrame([{"device": d, "workload_a": "a", "workload_b": "a", "tput_a": 1.0, "tput_b": 1.0,
                           "norm_a": 0.5, "norm_b": 0.5, "feasible": True} for d in ("v100", "k80")])
    truth = GroundTruth(solo, pairs, "v100")
    result = simulate(trace([(1, 0.0, 100.0, 1, "a")]), truth, policies.get("fifo"), ClusterSpec((("k80", 1),)))
    assert jct(result) == {1: 400.0}  # 100 reference seconds at a quarter of the speed


def test_gang_job_runs_at_its_slowest_gpu():
    # gang job g (2 GPUs, a) shares GPU 0 with s (b): g at min(0.5, 1) = 0.5, s at 0.8.
    # s needs 40/0.8 = 50 s; g does 25 by then and 75 alone: ends at 125.
    spec = ClusterSpec((("v100", 2),), share_multi_gpu=True)
    result = simulate(trace([(1, 0.0, 100.0, 2, "a"), (2, 0.0, 40.0, 1, "b")]), truth_abc(),
                      Scripted({1: (0, 1), 2: (0,)}), spec, check_every=1)
    assert jct(result) == {1: 125.0, 2: 50.0}


def test_exclusive_gang_job_refuses_a_co_runner():
    with pytest.raises(RuntimeError, match="exclusive"):
        simulate(trace([(1, 0.0, 100.0, 2, "a"), (2, 0.0, 40.0, 1, "b")]), truth_abc(),
                 Scripted({1: (0, 1), 2: (0,)}), ClusterSpec((("v100", 2),)))


def test_three_jobs_multiply_pairwise_norms():
    truth = truth_abc()
    assert truth.norm("v100", "a", ["b", "c"]) == pytest.approx(0.5 * 0.8)
    spec = ClusterSpec((("v100", 1),), max_jobs_per_gpu=3)
    # a: 0.4 with b and c. b: 0.8 * 0.4 = 0.32. c: 0.9 * 0.3 = 0.27. c (27 s of work) ends first at 100 s.
    result = simulate(trace([(1, 0.0, 100.0, 1, "a"), (2, 0.0, 100.0, 1, "b"), (3, 0.0, 27.0, 1, "c")]),
                      truth, Scripted({1: (0,), 2: (0,), 3: (0,)}), spec, check_every=1)
    assert jct(result)[3] == pytest.approx(100.0)
    # then a (60 left) at 0.5 needs 120 s and b (68 left) at 0.8 needs 85 s: b ends at 185,
    # a has 60 - 42.5 = 17.5 left alone: ends at 202.5
    t_b = 68 / 0.8
    assert jct(result)[2] == pytest.approx(100 + t_b)
    assert jct(result)[1] == pytest.approx(100 + t_b + (60 - 0.5 * t_b))
    # the first 100 s, three jobs on the GPU: where the truth is the product of pairs, and the summary says so
    crowded = dict(zip(result.jobs["job_id"], result.jobs["crowded_time"], strict=True))
    assert crowded == pytest.approx({1: 100.0, 2: 100.0, 3: 100.0})
    assert summarize(result, 1)["extrapolated_share"] == pytest.approx(300.0 / result.jobs["run_time"].sum())
    pair_only = simulate(trace([(1, 0.0, 100.0, 1, "a"), (2, 0.0, 100.0, 1, "b")]), truth, Scripted({1: (0,), 2: (0,)}),
                         spec)
    assert summarize(pair_only, 1)["extrapolated_share"] == 0.0


def test_preemption_pays_the_restart_cost():
    # Tiresias with a 50 GPU-s threshold: at t=100 job 1 (level 1) yields to job 2 (level 0),
    # job 2 runs 100..130, job 1 restarts at 130 with 100 s + 20 s restart left: ends at 250.
    policy = policies.get("tiresias", thresholds=(50.0,), period_s=10.0)
    result = simulate(trace([(1, 0.0, 200.0, 1, "a"), (2, 100.0, 30.0, 1, "b")]), truth_abc(), policy,
                      ONE_GPU, restart_cost_s=20.0, check_every=1)
    assert jct(result) == {1: 250.0, 2: 30.0}
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc[1, "preemptions"] == 1 and jobs.loc[1, "queue_delay"] == 30.0
    assert jobs.loc[1, "run_time"] == 220.0
    assert result.stats["preemptions"] == 1


def test_infeasible_pair_is_refused():
    solo, pairs = tables({("a", "a"): (0.5, 0.5), ("b", "b"): (0.5, 0.5)}, infeasible=(("a", "b"),))
    truth = GroundTruth(solo, pairs, "v100")
    with pytest.raises(SimulationError, match="infeasible"):
        simulate(trace([(1, 0.0, 10.0, 1, "a"), (2, 0.0, 10.0, 1, "b")]), truth,
                 Scripted({1: (0,), 2: (0,)}), ONE_GPU)


def test_cap_on_jobs_per_gpu_is_enforced():
    with pytest.raises(RuntimeError, match="cap 2"):
        simulate(trace([(i, 0.0, 10.0, 1, "a") for i in range(3)]), truth_abc(),
                 Scripted({0: (0,), 1: (0,), 2: (0,)}), ONE_GPU)


class PlacesTwice(Scripted):
    """Test helper: a buggy policy that places a running job again."""

    def schedule(self, view):
        super().schedule(view)
        for job in list(view.running.values()):
            view.place(job, (1,))


def test_double_placement_fails_loudly():
    with pytest.raises(SimulationError, match="placed while running"):
        simulate(trace([(1, 0.0, 10.0, 1, "a")]), truth_abc(), PlacesTwice({1: (0,)}), ClusterSpec((("v100", 2),)))


def test_policy_that_never_places_fails_loudly():
    with pytest.raises(SimulationError, match="leaves 1 jobs queued"):
        simulate(trace([(1, 0.0, 10.0, 1, "a")]), truth_abc(), Scripted({}), ONE_GPU)


def test_trace_errors_name_the_job():
    with pytest.raises(ValueError, match="job 7 needs 4 GPUs"):
        simulate(trace([(7, 0.0, 10.0, 4, "a")]), truth_abc(), policies.get("fifo"), ClusterSpec((("v100", 2),)))
    with pytest.raises(ValueError, match="'zzz'.*job 8"):
        simulate(trace([(8, 0.0, 10.0, 1, "zzz")]), truth_abc(), policies.get("fifo"), ONE_GPU)
    with pytest.raises(ValueError, match="job 9 \\(row 0\\): duration -1.0; expected seconds in \\[0.001, 1e\\+12\\]"):
        simulate(trace([(9, 0.0, -1.0, 1, "a")]), truth_abc(), policies.get("fifo"), ONE_GPU)


def test_ground_truth_errors_name_the_row():
    solo, pairs = tables(ABC)
    pairs.loc[2, "norm_a"] = float("nan")
    with pytest.raises(ValueError, match="pairs table row 2"):
        GroundTruth(solo, pairs, "v100")
    with pytest.raises(ValueError, match="missing columns"):
        GroundTruth(solo.drop(columns="throughput"), pairs, "v100")


def test_exclusive_busy_time_equals_gpu_seconds_run():
    rows = [(i, 7.0 * i, 30.0 + 11 * (i % 5), 1 + (i % 3 == 0), "abc"[i % 3]) for i in range(40)]
    result = simulate(trace(rows), truth_abc(), policies.get("fifo"), ClusterSpec((("v100", 3),)), check_every=5)
    end = result.jobs["finish_time"].max()
    gpu_seconds = float((result.jobs["run_time"] * result.jobs["num_gpus"]).sum())
    assert time_integral(result.timeline, "busy_gpus", end) == pytest.approx(gpu_seconds)
    assert result.jobs["start_time"].notna().all()


def test_numbers_checked_as_columns_make_the_jobs_the_row_by_row_check_makes():
    """The trace's numbers are checked a column at a time when all are valid; the jobs equal _job's, types included."""
    from coloc.sim import traces
    from coloc.sim.view import Profile
    table = pd.DataFrame({"job_id": [3.0, 1.0, 2.0], "submit_time": [0, 5, 5], "duration": [10.0, 2.5, 7],
                          "num_gpus": [1.0, 2.0, 1.0], "workload": ["a", "b", "c"]})
    table["duration"] = table["duration"].astype(float)
    jobs = traces.jobs_from_trace(table, Profile.of(truth_abc()), ClusterSpec((("v100", 2),)))
    fields = ("job_id", "submit_time", "duration", "num_gpus", "workload")
    made = [tuple((getattr(j, f), type(getattr(j, f))) for f in fields) for j in jobs.values()]
    by_row = [tuple((getattr(j, f), type(getattr(j, f))) for f in fields)
              for j in (traces._job(row, i) for i, row in enumerate(table[list(fields)].itertuples(index=False)))]
    assert made == by_row
    assert [type(v) for v, _ in made[0]] == [int, float, float, int, str]
    bad = table.assign(num_gpus=[1.0, 1.5, 1.0])
    with pytest.raises(ValueError, match="job 1 \\(row 1\\): num_gpus 1.5; expected an integer >= 1"):
        traces.jobs_from_trace(bad, Profile.of(truth_abc()), ClusterSpec((("v100", 2),)))
