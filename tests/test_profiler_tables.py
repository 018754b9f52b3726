"""Profiler pieces without worker processes: plan, settings, log, tables, samplers, device naming."""

import json
import math
import os
import warnings

import numpy as np
import pandas as pd
import pytest

from coloc import plots, profiler
from coloc.plots import profiling as plots_profile
from coloc.profiler import hardware, journal, sampler
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


# ---------------------------------------------------------------------------- device


def test_auto_device_on_a_machine_without_gpu_is_the_cpu_and_says_so_once(monkeypatch):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    monkeypatch.setattr(hardware, "_said_cpu", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = profiler.resolve("auto")
        second = profiler.resolve("auto", cpus=[0])
    said = [w for w in caught if "profiling on the CPU" in str(w.message)]
    assert len(said) == 1
    assert first.kind == "cpu" and first.torch_device == "cpu"
    assert first.name.startswith("cpu:") and first.name.endswith(f" x{len(os.sched_getaffinity(0))}")
    assert second.cpus == (0,) and second.name.endswith(" x1")


def test_cuda_request_without_gpu_and_bad_device_requests_say_what_was_tried():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    with pytest.raises(ProfilerError, match=r"torch.cuda.is_available\(\) is False"):
        profiler.resolve("cuda")
    with pytest.raises(ProfilerError, match="expected 'auto', 'cpu'"):
        profiler.resolve("tpu")
    with pytest.raises(ProfilerError, match="non-empty subset"):
        profiler.resolve("cpu", cpus=[10_000])
    with pytest.raises(ProfilerError, match="MPS needs an NVIDIA GPU"):
        with hardware.mps_daemon(True, profiler.resolve("cpu")):
            pass


# ---------------------------------------------------------------------------- samplers


def test_nvml_missing_raises_an_error_naming_what_was_tried():
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
        pytest.skip("NVML works on this machine")
    except pynvml.NVMLError:
        pass
    with pytest.raises(ProfilerError, match=r"nvmlInit\(\) failed.*libnvidia-ml"):
        sampler.open_nvml(0)


class FakeNvmlForErrorTest:
    """Stands in for pynvml in an error-handling test only: some metrics answer, others are unsupported."""

    NVML_CLOCK_SM = 1
    NVML_PCIE_UTIL_TX_BYTES, NVML_PCIE_UTIL_RX_BYTES = 0, 1

    class NVMLError_NotSupported(Exception):
        pass

    class Rates:
        gpu, memory = 87, 41

    class Memory:
        used = 5 * 2**30

    class Proc:
        def __init__(self, pid, used):
            self.pid, self.usedGpuMemory = pid, used

    def nvmlDeviceGetUtilizationRates(self, handle):
        return self.Rates()

    def nvmlDeviceGetMemoryInfo(self, handle):
        return self.Memory()

    def nvmlDeviceGetClockInfo(self, handle, clock):
        return 1755

    def nvmlDeviceGetPcieThroughput(self, handle, counter):
        return {0: 100, 1: 300}[counter]

    def nvmlDeviceGetPowerUsage(self, handle):
        raise self.NVMLError_NotSupported("Not Supported")

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        return [self.Proc(11, 2**30), self.Proc(99, 7)]

    def nvmlDeviceGetProcessUtilization(self, handle, since):
        raise self.NVMLError_NotSupported("Not Supported")


def test_nvml_probe_keeps_what_the_gpu_answers_and_names_what_it_does_not():
    probe = sampler.NvmlProbe(FakeNvmlForErrorTest(), handle=object())
    sample = probe.sample([11, 12])
    assert sample["gpu_util"] == 87 and sample["mem_util"] == 41 and sample["mem_used_bytes"] == 5 * 2**30
    assert sample["sm_clock_mhz"] == 1755
    assert sample["pcie_tx_bytes_s"] == 100 * 1024 and sample["pcie_rx_bytes_s"] == 300 * 1024
    assert sample["per_pid"] == {11: {"gpu_mem_bytes": float(2**30)}, 12: {}}
    assert "power_w" not in sample
    assert set(probe.errors) == {"power", "process_utilization"}
    assert "NotSupported" in probe.errors["power"]


def test_psutil_probe_reads_this_process_and_summarize_separates_other_load():
    probe = sampler.PsutilProbe(tuple(sorted(os.sched_getaffinity(0))))
    sample = probe.sample([os.getpid()])
    assert sample["per_pid"][os.getpid()]["rss_bytes"] > 10 * 2**20 and sample["cpu_busy_s"] > 0
    samples = [  # 2 cores for 2 s: 3 busy core-seconds, of which our pid 1.0 -> 75% busy, 50% other
        {"t": 10.0, "cpu_busy_s": 100.0, "per_pid": {7: {"cpu_s": 5.0, "rss_bytes": 10.0}}},
        {"t": 11.0, "cpu_busy_s": 101.0, "per_pid": {7: {"cpu_s": 5.5, "rss_bytes": 30.0}}, "gpu_util": 50.0},
        {"t": 12.0, "cpu_busy_s": 103.0, "per_pid": {7: {"cpu_s": 6.0, "rss_bytes": 20.0}}, "gpu_util": 70.0},
        {"t": 13.0, "cpu_busy_s": 200.0, "per_pid": {7: {"cpu_s": 9.0, "rss_bytes": 99.0}}},
    ]
    device, per_pid = sampler.summarize(samples, 10.0, 12.0, [7], n_cpus=2)
    assert device["cpu_busy_pct"] == pytest.approx(75.0) and device["other_cpu_pct"] == pytest.approx(50.0)
    assert device["gpu_util"] == pytest.approx(60.0)
    assert per_pid[7] == {"rss_bytes": 30.0}


# ---------------------------------------------------------------------------- log


def test_log_resumed_twice_after_a_torn_last_line_stays_readable_and_keeps_the_torn_bytes(tmp_path):
    log = tmp_path / "m.jsonl"
    assert journal.read(log) == [] and journal.recover(log) == []
    journal.append(log, {"key": "a", "x": float("nan"), "y": np.float64(2.5)})
    with open(log, "a") as fh:
        fh.write('{"key": "b", "x"')  # a write cut short by a kill
    with pytest.warns(RuntimeWarning, match=r"m.jsonl:2: skipping a torn last line"):
        assert journal.read(log) == [{"key": "a", "x": None, "y": 2.5}]  # a reader changes nothing
    with pytest.raises(ProfilerError, match="ends with an incomplete line"):
        journal.append(log, {"key": "c"})  # never after half a line
    with journal.locked(log):  # a first resume, as a sweep does it ...
        with pytest.warns(RuntimeWarning, match=r"m.jsonl:2: cut a torn last line \(16 bytes"):
            assert journal.recover(log) == [{"key": "a", "x": None, "y": 2.5}]
        journal.append(log, {"key": "c"})
    with journal.locked(log), warnings.catch_warnings():  # ... and a second one: nothing left to cut
        warnings.simplefilter("error")
        assert [r["key"] for r in journal.recover(log)] == ["a", "c"]
        journal.append(log, {"key": "d"})
        assert [r["key"] for r in journal.read(log)] == ["a", "c", "d"]
    assert (tmp_path / "m.jsonl.torn").read_text() == '{"key": "b", "x"\n'


def test_log_recover_cuts_crash_debris_completes_a_record_missing_its_newline_and_refuses_a_damaged_middle(tmp_path):
    log = tmp_path / "m.jsonl"
    journal.append(log, {"key": "a"})
    log.write_bytes(log.read_bytes() + b"\0" * 7)  # a crash can leave zeros where a write was under way
    with pytest.warns(RuntimeWarning, match="cut a torn last line"):
        assert journal.recover(log) == [{"key": "a"}]
    assert log.read_bytes() == b'{"key": "a"}\n'
    log.write_bytes(log.read_bytes() + b'{"key": "b"}')  # complete but for its newline: kept
    assert journal.recover(log) == [{"key": "a"}, {"key": "b"}] and log.read_bytes().endswith(b'"b"}\n')
    log.write_bytes(b'{"key": "a"}\n{"key": "b", "x\n{"key": "c"}\n')  # a torn line that older code appended after
    for reader in (journal.read, journal.recover):
        with pytest.raises(ProfilerError, match=r"m.jsonl:2: not a JSON record .* Only the last line can be cut"):
            reader(log)
    log.write_bytes(b'{"key": "a"}\n[1, 2]\n{"key": "c"}\n')
    with pytest.raises(ProfilerError, match=r"m.jsonl:2: expected a JSON object with a 'key'"):
        journal.recover(log)


def test_log_lock_stops_a_second_sweep_on_the_same_log(tmp_path):
    log = tmp_path / "m.jsonl"
    with journal.locked(log):
        with pytest.raises(ProfilerError, match="another sweep is writing this log"):
            with journal.locked(log):
                pass
    with journal.locked(log):
        pass


# ---------------------------------------------------------------------------- tables


def _record(workloads, repeat, tputs, feasible=True, error=None, other=10.0, device="cpu:test x2", **new_fields):
    """A record with the fields the tables read; without ``outcome`` it is in the format of logs before version 3."""
    jobs = [{"slot": i, "workload": w, "pid": 1, "throughput": t, "iterations": 5, "elapsed_s": 5 / t if t else 0,
             "cpu_util": 50.0, "rss_bytes": 1e8 * (i + 1)} for i, (w, t) in enumerate(zip(workloads, tputs))]
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
