"""The predictors stage in the workflow: what a run waits for, and config mistakes refused before anything runs."""

import pytest
from workflow_run import needed_by, planned, snakemake

pytestmark = pytest.mark.slow  # each test starts Snakemake (about 5 s)


def test_gavel_predictions_wait_for_no_profiling(ci_dry_run):
    """What each dataset's predictions wait for, among the jobs of the whole CI workflow planned from nothing
    (tests/conftest.py): what a dry run of that file alone plans."""
    assert ci_dry_run.returncode == 0, ci_dry_run.stdout + ci_dry_run.stderr
    jobs = planned(ci_dry_run.stdout)
    gavel, profiled = ({job["rule"] for job in needed_by(jobs, f"data/processed/predictions/{dataset}/lofo.parquet")}
                       for dataset in ("gavel", "profiled"))
    assert "predictors" in gavel and "profiling" not in gavel
    assert "profiling" in profiled


def test_a_misspelled_model_option_is_refused_by_the_dry_run(tmp_path):
    bad = snakemake("-n", "--config", 'predictors={"models": {"lgbm": {"params": {"n_estimatorz": 40}}}}', cwd=tmp_path)
    assert bad.returncode != 0
    assert "pair predictor 'lgbm': lgbm params: unknown LightGBM option 'n_estimatorz'" in bad.stdout + bad.stderr
