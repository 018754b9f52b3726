"""The predictors stage in the workflow: what a run waits for, and config mistakes refused before anything runs."""

import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from workflow_run import together

REPO = Path(__file__).resolve().parents[1]
CI_CONFIG = REPO / "config" / "ci.yaml"

pytestmark = pytest.mark.slow  # each test starts Snakemake (about 5 s)


def dry_run(*args, cwd):
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--cores", "2", "-n", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


def planned(stdout: str) -> set[str]:
    return {line.split()[1].rstrip(":") for line in stdout.splitlines() if line.startswith("rule ")}


def test_gavel_predictions_wait_for_no_profiling(tmp_path):
    gavel, profiled = together(*[partial(dry_run, f"data/processed/predictions/{dataset}/lofo.parquet", "--configfile",
                                         str(CI_CONFIG), cwd=tmp_path) for dataset in ("gavel", "profiled")])
    assert gavel.returncode == 0, gavel.stdout + gavel.stderr
    assert "predictors" in planned(gavel.stdout) and "profiling" not in planned(gavel.stdout)
    assert profiled.returncode == 0 and "profiling" in planned(profiled.stdout)


def test_a_misspelled_model_option_is_refused_by_the_dry_run(tmp_path):
    bad = dry_run("--config", 'predictors={"models": {"lgbm": {"params": {"n_estimatorz": 40}}}}', cwd=tmp_path)
    assert bad.returncode != 0
    assert "pair predictor 'lgbm': lgbm params: unknown LightGBM option 'n_estimatorz'" in bad.stdout + bad.stderr
