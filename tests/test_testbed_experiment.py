"""scripts/testbed.py, the testbed experiment end to end (coloc.testbed.experiment), on two core sets."""
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from test_testbed_runner import ROOT, A


@pytest.mark.slow
def test_the_script_runs_profiles_replays_and_compares_two_policies(tmp_path):
    """volcano fills device 0 up to the cap of 3 first: the set of three it forms is profiled and replayed."""
    config = yaml.safe_load((ROOT / "config" / "testbed.yaml").read_text())
    config["testbed"].update(devices="cpu:2", workloads=[A], n_jobs=3, min_s=0.3, max_s=0.6, batch_size=1,
                             policies=["volcano", "coloc-online"],
                             profiling={"repeats": 1, "warmup_s": 0.0, "window_s": 0.3, "min_iters": 2,
                                        "timeout_s": 60})
    path = tmp_path / "testbed.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "testbed.py"), "--config", str(path), "--out",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    table = pd.read_csv(out / "comparison.csv")
    assert sorted(table["replay"].unique()) == ["sim", "sim+startup", "sim-measured-sets"]
    assert set(table["policy"]) == {"volcano", "coloc-online"} and (table["n_jobs"] == 3).all()
    real = pd.read_csv(out / "real_jobs.csv")
    assert len(real) == 6 and (real["jct"] > 0).all()
    sim = table[table["replay"] == "sim"].set_index("policy")
    assert sim.loc["volcano", "jct_mean_real"] == pytest.approx(real[real["policy"] == "volcano"]["jct"].mean())
    assert (out / "jct_scatter.png").stat().st_size > 0
    assert "| sim | volcano | 3 |" in (out / "comparison.md").read_text()
    sets = pd.read_csv(out / "sets.csv")
    assert set(sets["set"]) == {f"{A}+{A}+{A}"} and len(pd.read_csv(out / "extrapolation.csv")) == 3
    again = subprocess.run([sys.executable, str(ROOT / "scripts" / "testbed.py"), "--config", str(path), "--out",
                            str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and pd.read_csv(out / "real_jobs.csv").equals(real)  # read back, not run again
