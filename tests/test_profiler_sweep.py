"""Real sweeps with tiny jobs (batch 1, one thread, short windows): measurements, failures, kills, resume.

The tests that start a sweep in another process, and the first one here (it starts the fork server,
which imports torch), take more than 5 s: they are marked slow."""

import dataclasses
import json
import signal
import subprocess
import sys
import time

import psutil
import pytest

from coloc import profiler
from coloc.profiler import Measurement

A, B, C = "recommendation-ml20m-b512", "squeezenet-cifar10-b32", "shufflenetv2-cifar10-b32"
TINY = profiler.Settings(device="cpu", threads=1, warmup_s=0.0, warmup_iters=1, window_s=0.3, min_iters=2,
                         timeout_s=60.0, batch_size=1, sample_interval_s=0.05)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def worker_pids(records) -> list[int]:
    return [job["pid"] for record in records for job in record["jobs"]]


@pytest.mark.slow
def test_sweep_measures_every_set_logs_each_and_a_rerun_measures_nothing(tmp_path):
    log = tmp_path / "measurements.jsonl"
    measurements = profiler.plan([A, B], repeats=1)
    records = profiler.run(measurements, log, TINY, progress=False)
    assert [r["workloads"] for r in records] == [list(m.workloads) for m in measurements]
    assert all(r["outcome"] == "ok" and r["feasible"] and r["error"] is None for r in records)
    for record in records:
        assert record["device"].startswith("cpu:") and record["settings"]["threads"] == 1
        assert len({job["pid"] for job in record["jobs"]}) == len(record["workloads"])  # one process per job
        for job in record["jobs"]:
            assert job["iterations"] >= 2 and job["elapsed_s"] >= 0.3
            assert job["throughput"] == pytest.approx(job["iterations"] / job["elapsed_s"])
            assert 0 < job["cpu_util"] <= 100 and job["rss_bytes"] > 50 * 2**20
        assert 0 < record["window_overlap"] <= 1
    assert not any(alive(pid) for pid in worker_pids(records))
    lines = log.read_text().splitlines()
    assert len(lines) == 5 and [json.loads(line)["key"] for line in lines] == [r["key"] for r in records]

    started = time.monotonic()
    again = profiler.run(measurements, log, TINY, progress=False)
    assert time.monotonic() - started < 5
    assert again == records and log.read_text().splitlines() == lines

    tables = profiler.pairs_table(again)
    assert len(tables) == 3 and tables["feasible"].all() and (tables["norm_a"] > 0).all()


def test_failing_jobs_are_logged_with_their_outcome_only_out_of_memory_is_infeasible_and_errors_are_retried(tmp_path):
    log = tmp_path / "measurements.jsonl"
    settings = dataclasses.replace(TINY, faults=((A, "oom"), (C, "crash")))
    measurements = [Measurement((A,), 0), Measurement((A, B), 0), Measurement((C,), 0), Measurement((B,), 0)]
    oom, pair, crash, healthy = profiler.run(measurements, log, settings, progress=False)
    assert oom["outcome"] == "out_of_memory" and oom["feasible"] is False
    assert oom["failed_workload"] == A and oom["failed_phase"] == "build"
    assert "allocate" in oom["error"] and "RuntimeError" in oom["error"]
    assert pair["outcome"] == "out_of_memory" and pair["failed_workload"] == A and "allocate" in pair["error"]
    assert crash["outcome"] == "error" and crash["feasible"] is None  # a crash says nothing about fit
    assert "SIGSEGV" in crash["error"] and crash["failed_phase"] == "window"
    assert healthy["outcome"] == "ok" and healthy["feasible"] and healthy["jobs"][0]["throughput"] > 0
    assert all(r["settings"]["timeout_s"] == 60.0 for r in (oom, pair, crash, healthy))  # what it ran under
    assert not any(alive(pid) for pid in worker_pids([oom, pair, crash, healthy]))
    assert len(log.read_text().splitlines()) == 4
    with pytest.warns(RuntimeWarning, match=f"left out of the solo table.*{C} on cpu:.*1 x error"):
        solo = profiler.solo_table([oom, crash, healthy]).set_index("workload")
    assert not solo.loc[A, "feasible"] and "allocate" in solo.loc[A, "error"]
    assert solo.loc[B, "feasible"] and C not in solo.index

    again = profiler.run(measurements, log, settings, progress=False)  # a rerun: the error only is measured again
    assert [again[0], again[1], again[3]] == [oom, pair, healthy]
    assert again[2]["outcome"] == "error" and again[2]["started_utc"] >= crash["started_utc"]
    assert again[2]["jobs"][0]["pid"] != crash["jobs"][0]["pid"]
    logged = [json.loads(line)["key"] for line in log.read_text().splitlines()]
    assert logged == [r["key"] for r in (oom, pair, crash, healthy, again[2])]


def test_a_timeout_is_measured_again_under_a_longer_timeout_and_kept_under_one_as_short(tmp_path):
    log = tmp_path / "measurements.jsonl"
    short = dataclasses.replace(TINY, timeout_s=0.05)  # no job builds, warms up and runs a 0.3 s window in 0.05 s
    measurement = [Measurement((A,), 0)]
    (timeout,) = profiler.run(measurement, log, short, progress=False)
    assert timeout["outcome"] == "timeout" and timeout["feasible"] is None and timeout["error"].startswith("timeout:")
    assert timeout["settings"]["timeout_s"] == 0.05
    assert profiler.run(measurement, log, short, progress=False) == [timeout]  # as short: nothing could change
    (measured,) = profiler.run(measurement, log, TINY, progress=False)  # 60 s: measured again
    assert measured["key"] == timeout["key"] and measured["outcome"] == "ok" and measured["feasible"] is True
    assert measured["jobs"][0]["throughput"] > 0 and len(log.read_text().splitlines()) == 2
    assert profiler.run(measurement, log, short, progress=False) == [measured]  # a measurement stays one
    assert len(log.read_text().splitlines()) == 2


def test_a_hanging_job_times_out_and_is_killed(tmp_path):
    settings = dataclasses.replace(TINY, timeout_s=4.0, faults=((B, "hang"),))
    (record,) = profiler.run([Measurement((A, B), 0)], tmp_path / "m.jsonl", settings, progress=False)
    assert 4.0 <= record["wall_s"] < 4.0 + 10  # the measurement's own clock: stopped at the timeout, then killed
    assert record["outcome"] == "timeout" and record["feasible"] is None
    assert record["error"].startswith("timeout:") and B in record["error"]
    assert not any(alive(pid) for pid in worker_pids([record]))


SWEEP = """
import faulthandler, signal, sys
faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks for the stacks if the sweep does not stop
# Ctrl-C as in a terminal, even when the tests run in a background job (which inherits SIGINT ignored)
signal.signal(signal.SIGINT, signal.default_int_handler)
from coloc import profiler
settings = profiler.Settings(device="cpu", threads=1, warmup_s=0.0, window_s=0.3, batch_size=1, timeout_s=60,
                             faults=(({B!r}, "hang"),) if sys.argv[2] == "hang" else ())
profiler.run(profiler.plan([{A!r}, {B!r}], shuffle=False), sys.argv[1], settings, progress=False)
""".format(A=A, B=B)


def descendants(pid: int) -> list:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def parent(process) -> int | None:
    try:
        return process.ppid()
    except psutil.NoSuchProcess:
        return None


def start_sweep_and_wait_for_the_hang(log):
    """A sweep in its own process: A solo is logged, then B (solo) hangs inside its window."""
    sweep = subprocess.Popen([sys.executable, "-c", SWEEP, str(log), "hang"], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lines = log.read_text().splitlines() if log.exists() else []
        workers = [p for p in descendants(sweep.pid) if parent(p) not in (sweep.pid, None)]  # by the fork server
        if len(lines) == 1 and workers:
            time.sleep(1.0)  # B is past its barrier, sleeping in the injected hang
            return sweep, descendants(sweep.pid)
        assert sweep.poll() is None, sweep.stderr.read()
        time.sleep(0.1)
    sweep.kill()
    pytest.fail("the sweep did not reach its second measurement within 60 s")


def kill_and_check_nothing_is_left(sweep, family, how, log) -> bytes:
    before = log.read_bytes()
    sweep.send_signal(how)
    try:
        sweep.wait(timeout=30)
    except subprocess.TimeoutExpired:
        sweep.send_signal(signal.SIGUSR1)
        time.sleep(2)
        sweep.kill()
        pytest.fail(f"the sweep did not exit within 30 s of {how.name}; its threads:\n{sweep.stderr.read()[-6000:]}")
    gone, still = psutil.wait_procs(family, timeout=15)
    assert still == [], f"left behind: {still}"
    assert log.read_bytes() == before  # the measurement in flight is lost, nothing else
    return before


@pytest.mark.slow
def test_a_killed_sweep_leaves_no_process_and_a_rerun_measures_only_the_rest(tmp_path):
    log = tmp_path / "measurements.jsonl"
    sweep, family = start_sweep_and_wait_for_the_hang(log)
    before = kill_and_check_nothing_is_left(sweep, family, signal.SIGKILL, log)
    torn = before[:-1].replace(A.encode(), B.encode())[:700]  # as if killed while writing the next record
    log.write_bytes(before + torn)

    settings = profiler.Settings(device="cpu", threads=1, warmup_s=0.0, window_s=0.3, batch_size=1, timeout_s=60)
    measurements = profiler.plan([A, B], shuffle=False)
    with pytest.warns(RuntimeWarning, match="cut a torn last line"):
        records = profiler.run(measurements, log, settings, progress=False)
    lines = log.read_bytes().splitlines(keepends=True)
    assert len(lines) == 5 and lines[0] == before  # the first record untouched, the four others new
    assert records[0] == json.loads(before) and all(r["outcome"] == "ok" for r in records)
    assert [r["workloads"] for r in records] == [[A], [B], [A, A], [A, B], [B, B]]
    assert log.with_name(log.name + ".torn").read_bytes() == torn + b"\n"
    assert profiler.run(measurements, log, settings, progress=False) == records  # a second resume reads it all


@pytest.mark.slow
def test_ctrl_c_stops_a_sweep_with_its_workers(tmp_path):
    log = tmp_path / "measurements.jsonl"
    sweep, family = start_sweep_and_wait_for_the_hang(log)
    kill_and_check_nothing_is_left(sweep, family, signal.SIGINT, log)
    assert sweep.returncode != 0 and "KeyboardInterrupt" in sweep.stderr.read()
