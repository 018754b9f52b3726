"""scripts/fit_testbed.py: the testbed's durations fitted on the volcano baseline from a run's data tables."""
import importlib.util
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def fit_testbed():
    spec = importlib.util.spec_from_file_location("fit_testbed", ROOT / "scripts" / "fit_testbed.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ranks_candidates_from_the_runs_tables_and_its_memory_table(fit_testbed, gavel, tmp_path):
    """Gavel's tables and a memory table as the memory rule writes it: the run's median beats one far too short
    (Volcano's published completion times have a median near 150 s), and the ranking is written least first."""
    solo, pairs = gavel
    solo.to_parquet(tmp_path / "solo.parquet")
    pairs.to_parquet(tmp_path / "pairs.parquet")
    pd.DataFrame({"workload": sorted(solo["workload"].unique()), "mem_bytes": 3.0 * 2 ** 30}).to_parquet(
        tmp_path / "memory.parquet")
    out = tmp_path / "fit.csv"
    assert fit_testbed.main(["--config", str(ROOT / "config" / "config.yaml"), "--data", str(tmp_path),
                             "--medians", "5", "60", "--sigmas", "1.4", "--out", str(out)]) == 0
    table = pd.read_csv(out)
    assert table["median_duration_s"].tolist() == [60, 5] and table["distance"].is_monotonic_increasing
    assert table["distance"].iloc[0] < 0.5 < table["distance"].iloc[1]


def test_a_missing_memory_table_is_named(fit_testbed, gavel, tmp_path):
    solo, pairs = gavel
    solo.to_parquet(tmp_path / "solo.parquet")
    pairs.to_parquet(tmp_path / "pairs.parquet")
    with pytest.raises(FileNotFoundError, match="memory.parquet: the jobs' estimated memory"):
        fit_testbed.main(["--data", str(tmp_path), "--medians", "60", "--sigmas", "1.4"])


def test_the_baseline_fitted_is_the_one_named(fit_testbed, gavel, tmp_path, capsys):
    """--baseline volcano-firstfit fits the global first fit's completion times, not volcano's: the two forms place
    the testbed's 51 jobs differently, so their distances to Volcano's published times differ, and the run says
    which it fitted."""
    solo, pairs = gavel
    solo.to_parquet(tmp_path / "solo.parquet")
    pairs.to_parquet(tmp_path / "pairs.parquet")
    pd.DataFrame({"workload": sorted(solo["workload"].unique()), "mem_bytes": 3.0 * 2 ** 30}).to_parquet(
        tmp_path / "memory.parquet")
    distances = {}
    for baseline in ("volcano", "volcano-firstfit"):
        out = tmp_path / f"{baseline}.csv"
        assert fit_testbed.main(["--config", str(ROOT / "config" / "config.yaml"), "--data", str(tmp_path),
                                 "--medians", "60", "--sigmas", "1.4", "--baseline", baseline, "--out", str(out)]) == 0
        assert f"baseline {baseline}," in capsys.readouterr().out
        distances[baseline] = pd.read_csv(out)["distance"].iloc[0]
    assert distances["volcano"] != distances["volcano-firstfit"]
