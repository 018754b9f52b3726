"""A job dies with the Snakemake that started it; a work folder has one writer at a time (real processes)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coloc.writer import LAUNCHER_VARIABLE, FolderBusy, claim, watch_launcher

LIB = str(Path(__file__).resolve().parents[1] / "lib")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [LIB, os.environ.get("PYTHONPATH")]))}
HOLDER = "import sys, time; from coloc.writer import claim; claim(sys.argv[1]); print('held', flush=True); time.sleep(60)"
# A stand-in for Snakemake: starts a job (the workflow's way: its pid in COLOC_LAUNCHER_PID) and waits for it.
LAUNCHER = ("import os, subprocess, sys, time; "
            f"env = dict(os.environ, {LAUNCHER_VARIABLE}=str(os.getpid())); "
            "job = subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]], env=env); "
            "print(job.pid, flush=True); job.wait()")
JOB = ("import sys, time; from coloc import params; from coloc.writer import claim; "
       "params.check({}); claim(sys.argv[1]); print('writing', flush=True); time.sleep(60)")


def gone(pid: int, within_s: float) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


def test_a_second_writer_is_refused_naming_the_first_until_it_dies(tmp_path):
    folder = tmp_path / "runs"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(FolderBusy, match=rf"{folder} is being written by pid {holder.pid} on .* since .*: another "
                                             r"job of this rule is still running"):
            claim(folder)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert claim(folder) == folder.resolve()  # the kernel dropped the dead holder's lock: no stale lock
    assert f"pid {os.getpid()} on " in (folder / ".writer").read_text()


def test_a_job_stops_when_its_snakemake_is_killed_and_frees_its_folder(tmp_path):
    folder = tmp_path / "runs"
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, JOB, str(folder)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=ENV)
    job = int(launcher.stdout.readline())
    try:
        deadline = time.monotonic() + 60
        while not (folder / ".writer").is_file() or f"pid {job} " not in (folder / ".writer").read_text():
            assert time.monotonic() < deadline, launcher.stderr.read()
            time.sleep(0.1)
        with pytest.raises(FolderBusy, match=f"pid {job} "):
            claim(folder)
        time.sleep(1.5)  # the job goes on while its launcher lives
        assert not gone(job, 0)
    finally:
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
    assert gone(job, 5), "the job outlived its launcher"
    assert f"coloc: the Snakemake process {launcher.pid} that started this job is gone" in launcher.stderr.read()
    assert claim(folder) == folder.resolve()


def test_outside_a_workflow_nothing_is_watched_and_a_dead_launcher_stops_the_job_at_once(tmp_path):
    assert watch_launcher({}) is None
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    job = subprocess.run([sys.executable, "-c", "import time; from coloc import params; params.check({}); "
                          "print('ran on'); time.sleep(5)"], env={**ENV, LAUNCHER_VARIABLE: str(dead.pid)},
                         capture_output=True, text=True, timeout=60)
    assert job.returncode == 1 and "ran on" not in job.stdout
    assert f"the Snakemake process {dead.pid} that started this job is gone" in job.stderr


@pytest.mark.slow
def test_a_workflow_job_ends_when_its_snakemake_is_killed_and_writes_nothing(tmp_path, mirror):
    """The reported fault, with the real workflow: Snakemake killed (SIGKILL) while a notebook rule runs."""
    import psutil
    from workflow_run import CI_CONFIG, REPO

    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "COLOC_DATA_MIRROR": str(mirror)}
    snakemake = subprocess.Popen([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--cores", "1",
                                  "data/processed/solo.parquet", "--configfile", str(CI_CONFIG)],
                                 cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline, job = time.monotonic() + 240, []
        while not job:  # the data_tables job: papermill and its kernel under Snakemake
            assert snakemake.poll() is None and time.monotonic() < deadline, snakemake.stderr.read()
            job = [p for p in psutil.Process(snakemake.pid).children(recursive=True) if "ipykernel" in " ".join(p.cmdline())]
            time.sleep(0.2)
        job = psutil.Process(snakemake.pid).children(recursive=True)
    finally:
        snakemake.send_signal(signal.SIGKILL)
        snakemake.wait()
    alive = psutil.wait_procs(job, timeout=60)[1]
    assert not alive, f"outlived Snakemake: {[' '.join(p.cmdline())[:80] for p in alive]}"
    assert not (tmp_path / "data" / "processed" / "solo.parquet").exists()
