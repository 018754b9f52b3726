"""The CI sweep through Snakemake's SLURM executor on a real SLURM (scripts/slurm_local.sh starts one; CI does).

In a copy of the finished CI run (fixture ci_run) without the simulation results of two scenarios, the sweep runs
them again as SLURM jobs with the profile workflow/profiles/slurm. One simulation job is cancelled (scancel) while
it runs; that run fails, the others finish (the profile keeps going); a rerun finishes the sweep. The gathered
summary then equals the local run's, timing columns aside, row for row: nothing lost, nothing changed by the
executor.

The two attempts run in the background from when the CI run has ended (tests/slurm_sweep.py, started with the CI
run by tests/conftest.py), while other tests run; this test runs last and waits for them."""

import pandas as pd
import pytest
from slurm_sweep import SUMMARY, attempts, run_summaries, slurm_unavailable

pytestmark = pytest.mark.slow  # a Snakemake sweep through SLURM (a minute or two)


@pytest.fixture
def slurm_attempts(request):
    """The sweep's two attempts (slurm_sweep.Attempts), once both have ended."""
    reason = slurm_unavailable()
    if reason:
        pytest.skip(reason)
    try:
        local = request.getfixturevalue("ci_run")
    except pytest.FixtureLookupError:
        pytest.skip("the session fixture ci_run (the local CI run) is not shared in tests/conftest.py")
    return attempts(local.parent)  # started after the CI run, by the process that ran it


def comparable(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary less its measured wall times (sim_wall_s, decision_ms_per_job), which differ run to run."""
    kept = summary.drop(columns=[c for c in summary.columns if "wall" in c or c.startswith("decision_")])
    keys = [c for c in ("scenario", "trace", "policy", "seed", "gpus", "load", "point") if c in kept.columns]
    return kept.sort_values(keys).reset_index(drop=True)


def test_ci_sweep_under_slurm_survives_a_cancelled_job_and_equals_the_local_run(slurm_attempts):
    attempts = slurm_attempts
    first_log = attempts.first_log
    assert attempts.first_returncode != 0, \
        "the sweep succeeded although one of its jobs was cancelled:\n" + first_log[-3000:]
    assert "CANCELLED" in first_log, first_log[-3000:]
    assert not attempts.summary_after_first, "a summary was gathered with one run missing"

    second = attempts.second
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert attempts.runs_after_first < run_summaries(attempts.workdir), \
        f"the rerun made no run the cancelled job ({attempts.cancelled}) lacked"

    under_slurm = comparable(pd.read_parquet(attempts.workdir / SUMMARY))
    expected = comparable(pd.read_parquet(attempts.local / SUMMARY))
    assert len(under_slurm) == len(expected) > 0
    pd.testing.assert_frame_equal(under_slurm, expected)
