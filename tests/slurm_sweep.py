"""The SLURM test's sweep (tests/test_slurm.py), run in the background from when the CI run has ended.

The sweep takes minutes, most of them SLURM jobs and the executor's waits between status checks; other tests run
meanwhile. tests/conftest.py starts it with the CI run, before the first test (when the SLURM test is to run and a
SLURM is reachable), in the process that runs the CI run; it records what it did in a file beside the CI run, which
the test reads in whichever process runs it (pytest-xdist's workers). In a copy of the finished CI run without the
simulation results of two scenarios, the sweep runs as SLURM jobs with the profile workflow/profiles/slurm, one
simulate job is cancelled (scancel) while it runs, the first attempt ends, and a second one finishes the sweep."""

import importlib.util
import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from workflow_run import CI_CONFIG, copy_workflow_and_run, wait_for, write_whole

SUMMARY = "results/sim/summary.parquet"
# The scenarios whose runs the sweep redoes under SLURM (five runs of the CI config: more than the four jobs it
# runs at once, so the first attempt goes on past the cancelled one).
SWEPT = ("philly-contended", "poisson")

# The local SLURM keeps no accounting database: job states come from squeue (finished jobs stay in it for
# MinJobAge, an hour, there). Status checks come 1 s apart, not the plugin's 40 s, while no job runs and after a
# check that found one finished; the plugin adds 10 s after each check that found none (its fixed back-off).
LOCAL_SLURM_ARGS = ["--slurm-status-command", "squeue", "--slurm-no-account",
                    "--slurm-init-seconds-before-status-checks", "1"]

def slurm_unavailable() -> str | None:
    """Why the test cannot run here, or None."""
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return "snakemake-executor-plugin-slurm is not installed (pip install -r requirements.txt)"
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "no SLURM here: sinfo/sbatch not found (start one: sudo scripts/slurm_local.sh start)"
    result = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=30)
    states = result.stdout.split()
    if result.returncode != 0 or not any(s.startswith(("idle", "mix", "alloc")) for s in states):
        return f"no SLURM node up (sinfo: {result.stdout.strip() or result.stderr.strip()!r}); " \
               "start one: sudo scripts/slurm_local.sh start"
    return None


def copy_without_simulations(local: Path, folder: Path) -> tuple[Path, Path]:
    """(repo, workdir): a copy of the workflow and of the finished CI run ``local`` in ``folder`` (on the
    filesystem every SLURM job sees), less the simulation results of the scenarios in SWEPT (their runs are the
    sweep to redo; the other scenarios' runs are kept as the local run wrote them) and the gathered results."""
    repo, workdir = folder / "repo", folder / "work"
    copy_workflow_and_run(local, repo, workdir)
    sim = workdir / "results" / "sim"
    missing = [name for name in SWEPT if not (sim / name).is_dir()]
    if missing:
        raise RuntimeError(f"the CI run made no results/sim/{missing}: SWEPT in tests/slurm_sweep.py names scenarios "
                           "of config/ci.yaml")
    for path in sim.iterdir():
        if path.is_file() or path.name in SWEPT:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    return repo, workdir


def sweep_command(repo):
    return [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "--profile",
            str(repo / "workflow" / "profiles" / "slurm"), "--jobs", "4", *LOCAL_SLURM_ARGS,
            SUMMARY, "--configfile", str(CI_CONFIG)]  # the target first: --configfile takes every value after it


def sweep_env(repo):
    env = dict(os.environ, PYTHONPATH=str(repo / "lib"))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return env


def slurm_jobs(run_id: str) -> list[tuple[str, str, str]]:
    """(job id, state, comment) of the SLURM jobs of one Snakemake run (its jobs are named by its run id)."""
    result = subprocess.run(["squeue", "-h", "--states=all", "--name", run_id, "-o", "%i|%T|%k"],
                            capture_output=True, text=True, timeout=30)
    return [tuple(line.split("|", 2)) for line in result.stdout.splitlines() if line.count("|") == 2]


def cancel_one_running_simulation(process, log_path: Path, seconds_running: float = 3.0) -> str:
    """Wait until a simulate job has run for ``seconds_running``, scancel it, return its comment."""
    running_since = {}
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and process.poll() is None:
        text = log_path.read_text()
        run_id = next((line.split("SLURM run ID: ", 1)[1].strip() for line in text.splitlines()
                       if "SLURM run ID: " in line), None)
        for job_id, state, comment in slurm_jobs(run_id) if run_id else []:
            if state == "RUNNING" and comment.startswith("rule_simulate_"):
                running_since.setdefault(job_id, time.monotonic())
                if time.monotonic() - running_since[job_id] >= seconds_running:
                    subprocess.run(["scancel", job_id], check=True, timeout=30)
                    return comment
        time.sleep(0.5)
    pytest.fail("no simulate job ran long enough to be cancelled:\n" + log_path.read_text()[-3000:])


def run_summaries(workdir: Path) -> set[Path]:
    """The summary files of the sweep's simulate jobs, results/sim/<scenario>/<policy>/summary.parquet."""
    return set((workdir / "results" / "sim").glob("*/*/summary.parquet"))


@dataclass
class Attempts:
    """What the two attempts left, for the test to check: the local CI run and the SLURM copy's folder; the first
    attempt's exit status and log, the comment of the job it had cancelled, whether a summary was gathered and the
    run summaries there were when it ended; the second attempt."""
    local: Path
    workdir: Path
    first_returncode: int
    first_log: str
    cancelled: str
    summary_after_first: bool
    runs_after_first: set[Path]
    second: subprocess.CompletedProcess


def outcome_file(ci_run_folder: Path) -> Path:
    return ci_run_folder / "slurm_attempts.pickle"


class Sweep:
    """The sweep with one job cancelled, then the rerun, from the finished CI run ``local``: called with the CI
    run's exit status (in the CI run's background thread), it records the Attempts, or why there are none, in
    outcome_file(``ci_run_folder``)."""

    def __init__(self, local: Path, ci_run_folder: Path):
        self.local, self.ci_run_folder = local, ci_run_folder
        self.process = None  # the Snakemake run in progress
        self.stopped = False  # the session has ended: start no further run
        self.lock = threading.Lock()

    def __call__(self, ci_returncode: int):
        try:
            if ci_returncode != 0:
                raise RuntimeError("the CI run failed (see the error of the fixture ci_run): no sweep")
            outcome = self._attempts()
        except BaseException as error:  # pytest.fail raises an OutcomeException: the test fails with its text
            outcome = f"{type(error).__name__}: {error}"
        write_whole(outcome_file(self.ci_run_folder), pickle.dumps(outcome))

    def _attempts(self) -> Attempts:
        repo, workdir = copy_without_simulations(self.local, self.ci_run_folder / "slurm")
        log_path = workdir / "first_attempt.log"
        with log_path.open("w") as log:
            self._start(repo, workdir, stdout=log, stderr=subprocess.STDOUT)
            try:
                cancelled = cancel_one_running_simulation(self.process, log_path)
                self.process.wait(timeout=900)
            finally:
                if self.process.poll() is None:
                    self.process.kill()
        first_returncode = self.process.returncode
        summary_after_first, runs_after_first = (workdir / SUMMARY).exists(), run_summaries(workdir)
        self._start(repo, workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            stdout, stderr = self.process.communicate(timeout=900)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        second = subprocess.CompletedProcess(self.process.args, self.process.returncode, stdout, stderr)
        return Attempts(self.local, workdir, first_returncode, log_path.read_text(), cancelled,
                        summary_after_first, runs_after_first, second)

    def _start(self, repo: Path, workdir: Path, **output):
        with self.lock:
            if self.stopped:
                raise RuntimeError("the session ended before the SLURM sweep did")
            self.process = subprocess.Popen(sweep_command(repo), cwd=workdir, env=sweep_env(repo), text=True,
                                            **output)

    def stop(self):
        """At the end of the session: a Snakemake still running is stopped (SIGTERM: it cancels its jobs)."""
        with self.lock:
            self.stopped = True
            if self.process is not None and self.process.poll() is None:
                self.process.terminate()


def selected(session: pytest.Session) -> bool:
    """Whether tests/test_slurm.py is among the session's tests and a SLURM is reachable."""
    return any(item.path.name == "test_slurm.py" for item in session.items) and slurm_unavailable() is None


def attempts(ci_run_folder: Path, timeout: float = 1800) -> Attempts:
    """The sweep's Attempts, once recorded (in any process of the session)."""
    path = outcome_file(ci_run_folder)
    if not wait_for(path, timeout, poll_s=1.0):
        pytest.fail(f"no SLURM sweep recorded in {path} after {timeout} s (it starts with the CI run, in "
                    "tests/conftest.py, when this test is selected)")
    outcome = pickle.loads(path.read_bytes())
    if isinstance(outcome, str):
        pytest.fail(outcome)
    return outcome
