"""The testbed runner with real training processes (tiny jobs: batch 1, one thread per core set); the
comparison's arithmetic is in test_testbed_compare. Each real run takes a few seconds; the fork server's start
(it imports torch) comes first, once per test process."""

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from coloc import policies
from coloc.testbed import devices, runner

A, B = "squeezenet-cifar10-b32", "recommendation-ml20m-b512"
TINY = runner.Settings(batch_size=1, measure_steps=2, poll_s=0.05, restart_cost_s=0.5)
ROOT = Path(__file__).resolve().parents[1]


def known(device: str, tput: float = 20.0):
    """A profile of A and B on `device`: what the runner converts counts with (not the tests' subject)."""
    solo = pd.DataFrame({"device": device, "workload": [A, B], "throughput": tput, "cpu_util": 90.0})
    pairs = pd.DataFrame({"device": device, "workload_a": [A, A, B], "workload_b": [A, B, B], "tput_a": tput / 2,
                          "tput_b": tput / 2, "norm_a": 0.5, "norm_b": 0.5, "feasible": True})
    return solo, pairs


def jobs(*rows) -> pd.DataFrame:
    """A trace of (workload, iterations) jobs, all at time 0."""
    return pd.DataFrame({"job_id": range(len(rows)), "submit_time": 0.0, "workload": [w for w, _ in rows],
                         "iterations": [n for _, n in rows], "duration": [n / 20.0 for _, n in rows], "num_gpus": 1})


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def policy(name: str, **params):
    made = policies.get(name, **params)
    made.name = name
    return made


def test_a_job_alone_finishes_after_its_iterations(tmp_path):
    devs = devices.parse("cpu:1")
    solo, pairs = known(devs[0].name)
    log = tmp_path / "fifo.jsonl"
    result = runner.run(jobs((A, 4)), policy("fifo"), devs, runner.profile_of(solo, pairs, devs[0].name), None, log,
                        TINY)
    job = result.jobs.iloc[0]
    assert job["iterations"] == 4 and job["finish_time"] > job["start_time"] >= 0
    assert job["jct"] == pytest.approx(job["finish_time"])
    assert result.launches["ended"].tolist() == ["finished"] and result.launches["from_iteration"].tolist() == [0]
    assert result.segments["iterations"].sum() == 4 and result.segments["co_runners"].tolist() == [""]
    logged = records(log)
    finish = [r for r in logged if r["key"] == "finish:0"]
    assert len(finish) == 1 and finish[0]["iterations"] == 4 and logged[-1]["key"] == "end"
    launched = [r["pid"] for r in logged if r["key"].startswith("launch:")]
    assert launched and not any(alive(pid) for pid in launched)
    # a finished run is read back from its journal, not run again
    started = time.monotonic()
    again = runner.run(jobs((A, 4)), policy("fifo"), devs, runner.profile_of(solo, pairs, devs[0].name), None, log,
                       TINY)
    assert time.monotonic() - started < 1.0
    pd.testing.assert_frame_equal(again.jobs, result.jobs, check_dtype=False)


def test_a_colocated_pair_has_both_jobs_factors_recorded(tmp_path):
    devs = devices.parse("cpu:1")
    solo, pairs = known(devs[0].name)
    result = runner.run(jobs((A, 40), (B, 20)), policy("volcano"), devs, runner.profile_of(solo, pairs, devs[0].name),
                        None, tmp_path / "volcano.jsonl", TINY)
    shared = result.segments[result.segments["co_runners"] != ""].set_index("job_id")
    assert shared.loc[0, "co_runners"] == B and shared.loc[1, "co_runners"] == A
    for job_id in (0, 1):  # measured over steps run wholly together, against the profiled 20 it/s
        factor = shared.loc[job_id, "factor"]
        assert factor > 0 and factor == pytest.approx(shared.loc[job_id, "measured_tput"] / 20.0)
    assert (result.jobs["colocated_time"] > 0).all()


class PreemptOnce:
    """A test policy on one device: job 0 first; `after_s` after placing it, preempted for job 1; placed again when
    job 1 ends."""

    name, kind, needs, optional, period_s, shares_gpus, max_jobs_per_gpu = ("preempt-once", "baseline", (), (), 0.2,
                                                                            True, 1)

    def __init__(self, after_s: float):
        self.after_s, self.done = after_s, False

    def queue_key(self, job):
        return (job.submit_time, job.job_id)

    def schedule(self, view):
        running = list(view.running.values())
        if not self.done and running and view.now - running[0].placed_at >= self.after_s:
            view.preempt(running[0])
            self.done = True
        if view.queue and not view.cluster.residents[0]:
            queued = sorted(view.queue, key=lambda j: -j.job_id if self.done else j.job_id)
            view.place(queued[0], (0,))


def test_a_preempted_job_resumes_at_its_count(tmp_path):
    devs = devices.parse("cpu:1")
    solo, pairs = known(devs[0].name)
    log = tmp_path / "preempt.jsonl"
    result = runner.run(jobs((A, 400), (A, 5)), PreemptOnce(after_s=0.3), devs,
                        runner.profile_of(solo, pairs, devs[0].name), None, log, TINY)
    launches = result.launches[result.launches["job_id"] == 0]
    assert launches["ended"].tolist() == ["stopped", "finished"]
    stop = [r for r in records(log) if r["key"].startswith("stop:")]
    assert len(stop) == 1 and stop[0]["job"] == 0 and 1 <= stop[0]["iterations"] < 400
    assert launches["from_iteration"].tolist() == [0, stop[0]["iterations"]]  # its checkpoint's count
    first = result.segments[result.segments["job_id"] == 0]
    assert first["iterations"].sum() == 400 and result.jobs["preemptions"].tolist() == [1, 0]
    other = result.launches[result.launches["job_id"] == 1].iloc[0]
    assert launches["launch_s"].iloc[1] >= other["end_s"]  # job 0 ran again only after job 1 ended


class Misplaces:
    name, kind, needs, optional, period_s, shares_gpus, max_jobs_per_gpu = ("misplaces", "baseline", (), (), None,
                                                                            True, 1)

    def queue_key(self, job):
        return (job.submit_time, job.job_id)

    def schedule(self, view):
        view.place(next(iter(view.queue)), (5,))


def test_an_invalid_placement_is_refused_with_a_clear_error(tmp_path):
    devs = devices.parse("cpu:2")
    solo, pairs = known(devs[0].name)
    log = tmp_path / "bad.jsonl"
    with pytest.raises(runner.TestbedError, match=r"policy misplaces: action refused: .*job 0 placed on invalid "
                                                  r"GPUs \(5,\)"):
        runner.run(jobs((A, 3)), Misplaces(), devs, runner.profile_of(solo, pairs, devs[0].name), None, log, TINY)
    assert [r["key"] for r in records(log)] == ["start", "refused"]


RUN = """
import sys
import pandas as pd
import yaml
from coloc import policies
from coloc.testbed import devices, runner

if __name__ == "__main__":
    devs = devices.parse("cpu:1")
    name = devs[0].name
    solo = pd.DataFrame({"device": name, "workload": ["%(a)s"], "throughput": 20.0})
    pairs = pd.DataFrame({"device": name, "workload_a": ["%(a)s"], "workload_b": ["%(a)s"], "norm_a": 0.5,
                          "norm_b": 0.5, "feasible": True})
    trace = pd.DataFrame({"job_id": [0], "submit_time": 0.0, "workload": ["%(a)s"], "iterations": [100000],
                          "duration": [5000.0], "num_gpus": 1})
    fifo = policies.get("fifo")
    fifo.name = "fifo"
    runner.run(trace, fifo, devs, runner.profile_of(solo, pairs, name), None, sys.argv[1],
               runner.Settings(batch_size=1))
"""


@pytest.mark.slow
def test_a_killed_runner_leaves_no_process_and_its_run_is_refused_after(tmp_path):
    script, log = tmp_path / "run.py", tmp_path / "fifo.jsonl"
    script.write_text(textwrap.dedent(RUN % {"a": A}))
    proc = subprocess.Popen([sys.executable, str(script), str(log)], cwd=ROOT)
    try:
        deadline, pids = time.monotonic() + 60, []
        while not pids and time.monotonic() < deadline:
            time.sleep(0.2)
            pids = [r["pid"] for r in records(log) if r["key"].startswith("launch:")] if log.exists() else []
        assert pids, "the runner launched no job within 60 s"
        training = psutil.Process(pids[0])
        family = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        assert alive(pids[0]) and pids[0] in family
        proc.kill()
        proc.wait(10)
        gone = time.monotonic() + 10
        while any(alive(pid) for pid in family) and time.monotonic() < gone:
            time.sleep(0.1)
        assert not [pid for pid in family if alive(pid)], "processes left behind by the killed runner"
        assert not training.is_running() or training.status() == psutil.STATUS_ZOMBIE
    finally:
        if proc.poll() is None:
            proc.kill()
    solo, pairs = known(devices.parse("cpu:1")[0].name)
    trace = pd.DataFrame({"job_id": [0], "submit_time": 0.0, "workload": [A], "iterations": [100000],
                          "duration": [5000.0], "num_gpus": 1})
    with pytest.raises(runner.TestbedError, match=r"was killed after 0 of 1 jobs finished; a killed run cannot be "
                                                  r"continued"):
        runner.run(trace, policy("fifo"), devices.parse("cpu:1"),
                   runner.profile_of(solo[solo["workload"] == A], pairs.iloc[:1], solo["device"][0]), None, log,
                   runner.Settings(batch_size=1))
