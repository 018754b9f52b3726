"""Profiler pieces without worker processes: plan, settings, tables and their figures (the device, samplers and log:
test_profiler_hardware, test_profiler_sampler, test_profiler_journal_recover)."""

import math

import numpy as np
import pandas as pd
import pytest

from coloc import plots, profiler
from coloc.plots import profiling as plots_profile
from coloc.profiler.errors import ProfilerError

A, B = "recommendation-ml20m-b512", "squeezenet-cifar10-b32"


# ---------------------------------------------------------------------------- plan and settings


def test_plan_has_every_solo_and_pair_per_round_in_a_seeded_shuffled_order():
    names = [A, B, "lm-wikitext2-b5", "resnet18-cifar10-b16"]
    measurements = profiler.plan(names, repeats=2, seed=3)
    assert len(measurements) == 2 * (4 + 10)
    first, second = measurements[:14], measurements[14:]
    assert {m.repeat for m in first} == {0} and {m.repeat for m in second} == {1}
    assert {m.workloads for m in first} == {m.workloads for m in second}
    assert sum(m.kind == "solo" for m in first) == 4 and sum(m.kind == "pair" for m in first) == 10
    assert all(list(m.workloads) == sorted(m.workloads) for m in measurements)
    assert measurements == profiler.plan(names, repeats=2, seed=3)
    assert [m.workloads for m in first] != [m.workloads for m in profiler.plan(names, seed=4)]
    assert [m.workloads for m in first] != [m.workloads for m in second]  # each round has its own order


def test_plan_with_sets_of_three_and_bad_requests():
    measurements = profiler.plan([A, B], set_sizes=[2, 3], shuffle=False)
    assert [m.workloads for m in measurements] == [(A,), (B,), (A, A), (A, B), (B, B), (A, A, A), (A, A, B),
                                                  (A, B, B), (B, B, B)]
    with pytest.raises(ProfilerError, match="resnet18-cifar10-b3"):
        profiler.plan([A, "resnet18-cifar10-b3"])
    with pytest.raises(ProfilerError, match="each may appear once"):
        profiler.plan([A, A])
    with pytest.raises(ProfilerError, match="repeats 0"):
        profiler.plan([A], repeats=0)


def test_settings_reject_bad_values_and_unknown_faults():
    with pytest.raises(ProfilerError, match="window_s = 0"):
        profiler.Settings(window_s=0)
    with pytest.raises(ProfilerError, match="threads = 0"):
        profiler.Settings(threads=0)
    with pytest.raises(ProfilerError, match="fault 'explode'"):
        profiler.Settings(faults=((A, "explode"),))


def test_extra_rounds_measure_only_sets_short_of_two_calm_repeats_within_the_budget():
    from coloc.profiler.sweep import _top_up

    plan = profiler.plan([A, B], repeats=2, shuffle=False)
    load = {((A,), 0): 2.0, ((A,), 1): 50.0, ((B,), 0): 1.0, ((B,), 1): 3.0}  # A solo: one calm repeat
    records = [_record(list(m.workloads), m.repeat, [1.0] * len(m.workloads),
                       other=load.get((m.workloads, m.repeat), 0.0)) for m in plan]
    calls = []

    def measure_calm_for_this_test(m):  # stands in for the sweep's measure-or-reuse: a calm, 4 s measurement
        calls.append((m.workloads, m.repeat))
        return _record(list(m.workloads), m.repeat, [1.0] * len(m.workloads), other=0.0), True

    extra = _top_up(plan, records, measure_calm_for_this_test, profiler.TopUp(rounds=3, budget_s=60), seed=0)
    assert calls == [((A,), 2)] and len(extra) == 1  # A then has two calm repeats: no further round
    calls.clear()
    records[0]["device_metrics"]["other_cpu_pct"] = 40.0  # now A solo has none calm: it needs two more rounds
    _top_up(plan, records, measure_calm_for_this_test, profiler.TopUp(rounds=3, budget_s=60), seed=0)
    assert calls == [((A,), 2), ((A,), 3)]
    calls.clear()
    _top_up(plan, records, measure_calm_for_this_test, profiler.TopUp(rounds=3, budget_s=3), seed=0)
    assert calls == [((A,), 2)]  # the 4 s measurement used up the 3 s budget
    calls.clear()
    records[2]["device_metrics"]["other_cpu_pct"] = 40.0  # A+A: one calm repeat left; A solo: none
    _top_up(plan, records, measure_calm_for_this_test, profiler.TopUp(rounds=1, budget_s=60), seed=0)
    assert calls == [((A,), 2), ((A, A), 2)]  # the set without any calm repeat goes first
    busy = [dict(r, device_metrics={"other_cpu_pct": 80.0}) for r in records]
    with pytest.warns(RuntimeWarning, match="no extra rounds"):
        assert _top_up(plan, busy, measure_calm_for_this_test, profiler.TopUp(rounds=3, budget_s=60), seed=0) == []


# ---------------------------------------------------------------------------- tables


def _record(workloads, repeat, tputs, feasible=True, error=None, other=10.0, device="cpu:test x2", **new_fields):
    """A record with the fields the tables read; without ``outcome`` it is in the format of logs before version 3."""
    jobs = [{"slot": i, "workload": w, "pid": 1, "throughput": t, "iterations": 5, "elapsed_s": 5 / t if t else 0,
             "cpu_util": 50.0, "rss_bytes": 1e8 * (i + 1)} for i, (w, t) in enumerate(zip(workloads, tputs, strict=True))]
    kind = {1: "solo", 2: "pair"}.get(len(workloads), "set")
    return {"key": f"{device}|{'+'.join(workloads)}|r{repeat}|x", "device": device, "device_kind": "cpu",
            "workloads": list(workloads), "kind": kind, "repeat": repeat, "feasible": feasible, "error": error,
            "jobs": jobs, "device_metrics": {"other_cpu_pct": other, "cpu_busy_pct": 99.0}, "wall_s": 4.0,
            **new_fields}


def _failed(workloads, repeat, error, outcome=None):
    """A failed measurement: in the current format when ``outcome`` is given, else as logs before version 3 had it."""
    jobs = [None] * len(workloads)
    if outcome is None:
        return _record(workloads, repeat, jobs, feasible=False, error=error)
    return _record(workloads, repeat, jobs, feasible={"out_of_memory": False}.get(outcome), error=error,
                   outcome=outcome, settings={"timeout_s": 120.0})


def _records():
    return [
        _record([A], 0, [10.0]), _record([A], 1, [12.0]), _record([A], 2, [11.5]),
        _record([B], 0, [4.0]), _record([B], 1, [4.0]),
        _record([A, B], 0, [5.0, 3.0]), _record([A, B], 1, [6.6, 3.2]),
        _record([A, A], 0, [5.0, 6.0]), _record([A, A], 1, [6.0, 5.0]),
        _record([B, B], 0, [0.0, 0.0], feasible=False, error="RuntimeError: out of memory"),
        _record([B, B], 1, [2.0, 2.0]),
    ]


def test_solo_table_averages_repeats_in_the_contract():
    solo = profiler.solo_table(_records())
    assert list(solo.columns[:3]) == ["device", "workload", "throughput"]
    row = solo.set_index("workload").loc[A]
    assert row["throughput"] == pytest.approx(11.5)  # the median of 10, 12, 11.5
    assert row["throughput_std"] == pytest.approx(np.std([10.0, 12.0, 11.5]))
    assert row["repeats"] == 3 and bool(row["feasible"]) and row["cpu_util"] == 50.0 and row["mem_bytes"] == 1e8


def test_pairs_table_normalizes_by_solo_and_by_the_same_round_and_marks_failures():
    table = profiler.pairs_table(_records())
    assert list(table.columns[:8]) == ["device", "workload_a", "workload_b", "tput_a", "tput_b", "norm_a", "norm_b",
                                       "feasible"]
    pairs = table.set_index(["workload_a", "workload_b"])
    ab = pairs.loc[(A, B)]
    assert ab["tput_a"] == pytest.approx(5.8) and ab["norm_a"] == pytest.approx(5.8 / 11.5)
    assert ab["norm_b"] == pytest.approx(3.1 / 4.0)
    # per round: 5/10 and 6.6/12 -> 0.5 and 0.55
    assert ab["norm_a_std"] == pytest.approx(0.025)
    aa = pairs.loc[(A, A)]
    assert aa["norm_a"] == pytest.approx(aa["norm_b"]) and bool(aa["feasible"])
    bb = pairs.loc[(B, B)]
    assert not bb["feasible"] and bb["tput_a"] == 0.0 and math.isnan(bb["norm_a"])
    assert bb["error"] == "RuntimeError: out of memory" and bb["failed_repeats"] == 1 and bb["repeats"] == 1


C, D = "lm-wikitext2-b5", "resnet18-cifar10-b16"  # sorted: C, A, B
TIMEOUT = "timeout: {} did not finish its window within 120 s"


def test_only_running_out_of_memory_makes_a_set_infeasible_other_failures_are_skipped_or_left_out_by_name():
    records = _records() + [  # _records: B+B ran out of memory in round 0 (a log before version 3)
        _failed([A, B], 2, TIMEOUT.format(B), outcome="timeout"),  # a third round of A+B timed out
        _record([C], 0, [3.0]), _failed([C], 1, "crashed: the worker died by SIGSEGV during its window", "error"),
        _failed([D], 0, TIMEOUT.format(D), outcome="timeout"),  # D solo: no repeat measured
        _failed([C, A], 0, TIMEOUT.format(C)),  # logs before version 3: a timeout was feasible false ...
        _failed([C, C], 0, "crashed: the worker died by SIGKILL (killed: out of memory?) during its window"),
        _failed([C, B], 0, "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"),  # ... and so was this
    ]
    with pytest.warns(RuntimeWarning, match="left out of the solo table") as said:
        solo = profiler.solo_table(records)
    assert f"{D} on cpu:test x2: 1 x timeout (timeout: {D}" in str(said[0].message)
    solo = solo.set_index("workload")
    assert D not in solo.index and bool(solo.loc[C, "feasible"]) and solo.loc[C, "throughput"] == 3.0
    assert solo.loc[C, "repeats"] == 1 and solo.loc[C, "failed_repeats"] == 1 and "SIGSEGV" in solo.loc[C, "error"]
    with pytest.warns(RuntimeWarning, match="left out of the pairs table") as said:
        pairs = profiler.pairs_table(records, solo.reset_index())
    message = str(said[0].message)
    assert f"{C} next to {A} on cpu:test x2: 1 x timeout" in message and f"{C} next to {C}" in message
    assert "1 x error (crashed: the worker died by SIGKILL" in message
    pairs = pairs.set_index(["workload_a", "workload_b"])
    assert set(pairs.index) == {(A, A), (A, B), (B, B), (C, B)}
    ab = pairs.loc[(A, B)]  # the timed-out round is skipped: the same numbers as from the two measured rounds
    assert bool(ab["feasible"]) and ab["tput_a"] == pytest.approx(5.8) and ab["norm_b"] == pytest.approx(3.1 / 4.0)
    assert ab["repeats"] == 2 and ab["failed_repeats"] == 1 and ab["error"].startswith("timeout:")
    assert not pairs.loc[(B, B), "feasible"] and not pairs.loc[(C, B), "feasible"]  # out of memory: did not fit
    assert pairs.loc[(C, B), "error"].startswith("OutOfMemoryError") and pairs.loc[(C, B), "tput_a"] == 0.0
    jobs = profiler.jobs_table(records).drop_duplicates("key").set_index("set")
    assert jobs.loc[f"{C}+{A}", "outcome"] == "timeout" and bool(jobs.loc[f"{C}+{A}", "feasible"])
    assert jobs.loc[f"{C}+{C}", "outcome"] == "error" and jobs.loc[f"{C}+{B}", "outcome"] == "out_of_memory"
    with pytest.warns(RuntimeWarning, match="left out of the (solo|pairs) table"):
        summary = profiler.summary(records)
    assert summary["failed"] == 7 and summary["out_of_memory"] == 2


def test_outcome_of_old_records_and_which_ones_a_rerun_keeps():
    from coloc.profiler import outcome

    assert outcome.of(_record([A], 0, [1.0])) == "ok"
    cpu_oom = ("RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
               "memory: you tried to allocate 1152921504606846976 bytes. Error code 12 (Cannot allocate memory)")
    assert outcome.of(_failed([A], 0, cpu_oom)) == "out_of_memory"  # torch 2.13's own words
    assert outcome.of(_failed([A], 0, "MemoryError: ")) == "out_of_memory"
    assert outcome.of(_failed([A], 0, TIMEOUT.format(A))) == "timeout"
    assert outcome.of(_failed([A], 0, "ValueError: shapes (3,) and (4,) not aligned")) == "error"
    assert outcome.of(_failed([A], 0, "crashed: the worker died by SIGKILL (killed: out of memory?)")) == "error"
    timeout = _failed([A], 0, TIMEOUT.format(A), outcome="timeout")  # ran under timeout_s 120
    assert outcome.reusable(timeout, 120.0) and not outcome.reusable(timeout, 121.0)
    assert not outcome.reusable(_failed([A], 0, TIMEOUT.format(A)), 60.0)  # old: the timeout it ran under unknown
    assert not outcome.reusable(_failed([A], 0, "crashed: ...", outcome="error"), 120.0)
    assert outcome.reusable(_failed([A], 0, "OutOfMemoryError: CUDA", outcome="out_of_memory"), 999.0)
    with pytest.raises(ProfilerError, match="outcome 'infeasible'"):
        outcome.of(_record([A], 0, [1.0], outcome="infeasible"))


def test_spread_and_summary_report_the_repeat_spread():
    spread = profiler.spread_table(_records()).set_index(["set", "slot"])
    assert spread.loc[(A, 0), "spread"] == pytest.approx(2.0 / np.mean([10.0, 12.0, 11.5]))
    assert spread.loc[(B, 0), "spread"] == 0.0
    summary = profiler.summary(_records())
    assert summary["measurements"] == 11 and summary["failed"] == 1
    assert summary["measuring_s"] == pytest.approx(44.0)
    assert summary["spread_max"] == pytest.approx(1.6 / 5.8)  # A next to B: 5.0 and 6.6
    assert summary["norm_min"] == pytest.approx(5.5 / 11.5)  # A next to A


def test_disturbed_repeats_are_left_out_only_when_every_set_has_a_calm_one():
    records = [
        _record([A], 0, [10.0], other=2.0), _record([A], 1, [5.0], other=60.0), _record([A], 2, [11.0], other=5.0),
        _record([B], 0, [4.0], other=4.0), _record([B], 1, [3.0], other=50.0),
        _record([A, B], 0, [5.0, 2.0], other=3.0), _record([A, B], 1, [2.0, 1.0], other=70.0),
    ]
    solo = profiler.solo_table(records).set_index("workload")
    assert solo.loc[A, "throughput"] == pytest.approx(10.5) and solo.loc[A, "repeats"] == 2
    assert solo.loc[A, "disturbed_repeats"] == 1 and solo.loc[B, "throughput"] == 4.0
    pair = profiler.pairs_table(records).iloc[0]
    assert pair["tput_a"] == 5.0 and pair["repeats"] == 1 and pair["disturbed_repeats"] == 1
    assert pair["norm_a"] == pytest.approx(5.0 / 10.5) and pair["norm_b"] == pytest.approx(2.0 / 4.0)
    spread = profiler.spread_table(records).set_index(["set", "slot"])
    assert spread.loc[(A, 0), "spread"] == pytest.approx(1.0 / 10.5)
    assert spread.loc[(A, 0), "spread_all"] == pytest.approx(6.0 / np.mean([10.0, 5.0, 11.0]))
    summary = profiler.summary(records)
    assert summary["disturbed"] == 3 and summary["left_out"] == 3 and summary["within_10pct"] == 1.0

    records[3]["device_metrics"]["other_cpu_pct"] = 40.0  # B solo: no calm repeat left -> every repeat counts
    solo = profiler.solo_table(records).set_index("workload")
    assert solo.loc[A, "throughput"] == pytest.approx(10.0) and solo.loc[A, "disturbed_repeats"] == 0
    assert solo.loc[B, "throughput"] == pytest.approx(3.5)
    pair = profiler.pairs_table(records).iloc[0]
    assert pair["tput_a"] == pytest.approx(3.5) and pair["norm_a"] == pytest.approx(3.5 / 10.0)
    assert profiler.summary(records)["left_out"] == 0
    kept = profiler.solo_table(records[:3], max_other_load_pct=None).set_index("workload")
    assert kept.loc[A, "throughput"] == pytest.approx(10.0)


def test_tables_keep_the_last_record_of_a_key_logged_twice():
    records = _records() + [_record([B, B], 0, [2.0, 2.0])]  # a retried failure
    pairs = profiler.pairs_table(records).set_index(["workload_a", "workload_b"])
    assert bool(pairs.loc[(B, B), "feasible"]) and pairs.loc[(B, B), "repeats"] == 2


def test_figures_are_written(tmp_path):
    records = _records()
    pairs = profiler.pairs_table(records)
    matrix = plots_profile.norm_matrix(pairs)
    assert matrix.loc[A, A] == pytest.approx(pairs.set_index("workload_b").loc[A, "norm_a"])
    assert np.isnan(matrix.loc[B, B])
    heat = plots.save(plots_profile.slowdown_heatmap(pairs), tmp_path / "heat.png")
    spread = plots.save(plots_profile.repeat_spread(profiler.jobs_table(records)), tmp_path / "spread.png")
    assert heat.stat().st_size > 10_000 and spread.stat().st_size > 10_000
    assert plots.save(plots_profile.slowdown_heatmap(pairs.iloc[:0]), tmp_path / "none.png").exists()
    with pytest.raises(ValueError, match="pass device="):
        plots_profile.slowdown_heatmap(pd.concat([pairs, pairs.assign(device="other")]))
