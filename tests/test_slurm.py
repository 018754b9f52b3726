"""The CI sweep through Snakemake's SLURM executor on a real SLURM (scripts/slurm_local.sh starts one; CI does).

In a copy of the finished CI run (fixture ci_run) without its simulation results, the sweep runs again as SLURM
jobs with the profile workflow/profiles/slurm. One simulation job is cancelled (scancel) while it runs; that run
fails, the others finish (the profile keeps going); a rerun finishes the sweep. The gathered summary then equals
the local run's, timing columns aside, row for row: nothing lost, nothing changed by the executor."""

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # a Snakemake sweep through SLURM (a minute or two)

REPO = Path(__file__).resolve().parents[1]
CI_CONFIG = REPO / "config" / "ci.yaml"
SUMMARY = "results/sim/summary.parquet"

# The local SLURM keeps no accounting database: job states come from squeue (finished jobs stay in it for
# MinJobAge, an hour, there). Status checks start after 2 s, not the plugin's 40 s, to keep the test short.
LOCAL_SLURM_ARGS = ["--slurm-status-command", "squeue", "--slurm-no-account",
                    "--slurm-init-seconds-before-status-checks", "2"]


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


@pytest.fixture
def slurm_copy(request, tmp_path):
    """A copy of the workflow and of the finished CI run, less the simulation results (the sweep to redo)."""
    reason = slurm_unavailable()
    if reason:
        pytest.skip(reason)
    try:
        local = request.getfixturevalue("ci_run")
    except pytest.FixtureLookupError:
        pytest.skip("the session fixture ci_run (the local CI run) is not shared in tests/conftest.py")
    repo, workdir = tmp_path / "repo", tmp_path / "work"  # on the filesystem every SLURM job sees
    repo.mkdir()
    for name in ("Snakefile", "environment.yml"):
        shutil.copy2(REPO / name, repo / name)
    for part in ("workflow", "config", "notebooks", "lib"):
        shutil.copytree(REPO / part, repo / part)
    for part in ("data", "results", "figures", "logs"):
        shutil.copytree(local / part, workdir / part)
    shutil.rmtree(workdir / "results" / "sim")
    return local, repo, workdir


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


def comparable(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary less its measured wall times (sim_wall_s, decision_ms_per_job), which differ run to run."""
    kept = summary.drop(columns=[c for c in summary.columns if "wall" in c or c.startswith("decision_")])
    keys = [c for c in ("scenario", "trace", "policy", "seed", "gpus", "load", "point") if c in kept.columns]
    return kept.sort_values(keys).reset_index(drop=True)


def test_ci_sweep_under_slurm_survives_a_cancelled_job_and_equals_the_local_run(slurm_copy):
    local, repo, workdir = slurm_copy
    log_path = workdir / "first_attempt.log"
    with log_path.open("w") as log:
        first = subprocess.Popen(sweep_command(repo), cwd=workdir, env=sweep_env(repo), stdout=log,
                                 stderr=subprocess.STDOUT, text=True)
        try:
            cancelled = cancel_one_running_simulation(first, log_path)
            first.wait(timeout=900)
        finally:
            if first.poll() is None:
                first.kill()
    first_log = log_path.read_text()
    assert first.returncode != 0, "the sweep succeeded although one of its jobs was cancelled:\n" + first_log[-3000:]
    assert "CANCELLED" in first_log, first_log[-3000:]
    assert not (workdir / SUMMARY).exists(), "a summary was gathered with one run missing"
    after_first = run_summaries(workdir)

    second = subprocess.run(sweep_command(repo), cwd=workdir, env=sweep_env(repo), capture_output=True,
                            text=True, timeout=900)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert after_first < run_summaries(workdir), f"the rerun made no run the cancelled job ({cancelled}) lacked"

    under_slurm = comparable(pd.read_parquet(workdir / SUMMARY))
    expected = comparable(pd.read_parquet(local / SUMMARY))
    assert len(under_slurm) == len(expected) > 0
    pd.testing.assert_frame_equal(under_slurm, expected)
