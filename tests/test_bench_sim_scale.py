"""benchmarks/sim_scale.py: a point is a real simulation in its own process; the growth exponents are log-log slopes."""
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "sim_scale.py"


@pytest.fixture(scope="module")
def sim_scale():
    spec = importlib.util.spec_from_file_location("sim_scale", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_exponents_are_the_slopes_of_time_against_jobs_and_gpus(sim_scale):
    rows = [{"policy": "p", "cluster": "v100", "jobs": jobs, "gpus": gpus, "wall_s": 2e-6 * jobs ** 1.5 * gpus ** 0.25,
             "cpu_s": 1e-6 * jobs * gpus ** 0.5} for jobs in (10_000, 100_000, 1_000_000) for gpus in (1_000, 10_000)]
    rows.append({"policy": "p", "cluster": "v100", "jobs": 1_000_000, "gpus": 100, "wall_s": float("nan")})  # stopped
    growth = sim_scale.exponents(pd.DataFrame(rows)).set_index(["over", "gpus", "jobs"], drop=False)
    assert growth["load"].eq(1.1).all()  # a table without a load column ran at the default load
    over_jobs = growth[growth["over"] == "jobs"]
    assert len(over_jobs) == 2 and over_jobs["exponent_wall"].round(6).eq(1.5).all()
    assert over_jobs["exponent_cpu"].round(6).eq(1.0).all()
    over_gpus = growth[growth["over"] == "gpus"]
    assert len(over_gpus) == 3 and over_gpus["exponent_wall"].round(6).eq(0.25).all()
    assert over_gpus["exponent_cpu"].round(6).eq(0.5).all()


@pytest.mark.parametrize("name, kind", [("fifo", "v100"), ("tiresias", "mixed")])
def test_a_point_runs_the_simulation_in_its_own_process(sim_scale, mirror, name, kind):
    args = sim_scale.argparse.Namespace(processed=Path("no-processed-tables"), raw_dir=mirror, limit_s=120,
                                        predictions=None, utilization=None, predictor="egat", util_predictor="horus",
                                        load=0.9)
    row = sim_scale.run_point(args, name, 300, 40, kind)
    assert (row["policy"], row["jobs"], row["gpus"], row["cluster"], row["load"]) == (name, 300, 40, kind, 0.9)
    assert row["placements"] >= 300 and row["placements"] - row["preemptions"] == 300  # each job placed once more than stopped
    assert row["jobs_per_s"] == pytest.approx(300 / row["wall_s"])
    assert 0 < row["cpu_s"] and 0 < row["peak_gb"] < 4


def test_exponents_are_apart_per_load(sim_scale):
    rows = [{"policy": "p", "cluster": "v100", "load": load, "jobs": jobs, "gpus": 1_000,
             "wall_s": 1e-6 * jobs ** power, "cpu_s": 1e-6 * jobs ** power}
            for load, power in ((0.9, 1.0), (1.1, 1.4)) for jobs in (10_000, 100_000, 1_000_000)]
    growth = sim_scale.exponents(pd.DataFrame(rows)).set_index("load")
    assert growth.loc[0.9, "exponent_cpu"] == pytest.approx(1.0)
    assert growth.loc[1.1, "exponent_cpu"] == pytest.approx(1.4)


def test_the_jobs_digest_sees_every_bit_and_not_the_row_order(sim_scale):
    jobs = pd.DataFrame({"job_id": [2, 0, 1], "start_time": [1.0, 0.5, 0.25], "device": ["v100", "k80", "v100"]})
    digest = sim_scale.jobs_digest(jobs)
    assert sim_scale.jobs_digest(jobs.iloc[[2, 0, 1]]) == digest
    later = jobs.assign(start_time=[1.0, 0.5, float(np.nextafter(0.25, 1.0))])
    assert sim_scale.jobs_digest(later) != digest
    assert sim_scale.jobs_digest(jobs.assign(device=["v100", "v100", "v100"])) != digest


def test_a_points_decision_cpu_time_and_digest(sim_scale, mirror):
    """The same point twice: the same digest; another policy's decisions: another digest; the CPU time inside the
    policy's schedule is part of the simulation's."""
    args = sim_scale.argparse.Namespace(processed=Path("no-processed-tables"), raw_dir=mirror, limit_s=120,
                                        predictions=None, utilization=None, predictor="egat", util_predictor="horus",
                                        load=1.1)
    rows = [sim_scale.run_point(args, name, 400, 24, "v100") for name in ("coloc", "coloc", "fifo")]
    assert rows[0]["jobs_sha256"] == rows[1]["jobs_sha256"] != rows[2]["jobs_sha256"]
    for row in rows:
        assert 0 < row["decision_cpu_ms_per_job"] * row["jobs"] / 1000 < row["cpu_s"]


def test_sim_speed_runs_every_policy_its_data_allows_and_says_which_it_skipped_and_why(mirror, tmp_path):
    """`python benchmarks/sim_speed.py` (docs/scale.md: every registered policy) failed on Gavel's tables with
    "policy 'lucid': ... has no packing label on 'v100'". It skips lucid and horus (no utilization predictions here)
    with their reasons and runs the others."""
    import subprocess
    import sys

    from coloc import policies
    script = SCRIPT.with_name("sim_speed.py")
    done = subprocess.run([sys.executable, str(script), "--sizes", "100", "--gpus", "8", "--processed",
                           str(tmp_path / "none"), "--raw-dir", str(mirror), "--out", str(tmp_path / "speed.csv")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert ("skipped lucid: no packing label (the solo table's lucid_label) for " in done.stdout
            and "Lucid's job types only" in done.stdout), done.stdout
    assert "skipped horus: no utilization predictions (--utilization)" in done.stdout
    ran = pd.read_csv(tmp_path / "speed.csv")
    skipped = {line.split(":")[0].split()[1] for line in done.stdout.splitlines() if line.startswith("skipped ")}
    assert set(ran["policy"]) == set(policies.names()) - skipped and "lucid" in skipped
    assert (ran["jobs"] == 100).all() and (ran["jct_mean"] > 0).all()
