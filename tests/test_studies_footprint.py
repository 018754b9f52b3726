"""The memory of a simulate job, estimated from its scenario: the rule's mem_mb, and a refusal beyond 24 GB."""

import copy
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings, strategies as st
from workflow_run import planned

from coloc import config as cfg
from coloc.studies import footprint

REPO = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((REPO / "config" / "config.schema.yaml").read_text())
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
POISSON = {"trace": {"source": "poisson", "n_jobs": 3000}, "cluster": "v100:64", "seeds": [0, 1],
           "sweep": {"load": [0.9, 1.1]}}


def test_the_estimate_counts_the_jobs_of_every_run_kept_and_the_gpus():
    # 600 MiB + 3000 jobs x (2000 B + 300 B x 4 runs) + 64 GPUs x 400 B = 638,771,200 B = 609.2 MiB
    assert footprint.simulate_mb(POISSON) == 610
    wide = {**POISSON, "cluster": "v100:1", "sweep": {"gpus": [1, 1_000_000]}}  # swept to 1e6 GPUs, 4 runs
    assert footprint.simulate_mb(wide) == -(-(600 * 2 ** 20 + 3000 * 3200 + 1_000_000 * 400) // 2 ** 20)  # 991
    philly = {**POISSON, "trace": {"source": "philly", "n_jobs": None}}  # the whole shipped trace at most
    assert footprint.simulate_mb(philly) == -(-(600 * 2 ** 20 + 82_247 * 3200 + 64 * 400) // 2 ** 20)  # 852


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(1, 5_000_000), st.integers(1, 40), st.integers(1, 8))
def test_a_scenario_beyond_a_24_gb_machine_is_refused_with_its_estimate(n_jobs, seeds, points):
    config = copy.deepcopy(DEFAULT)
    spec = config["simulation"]["scenario_specs"]["poisson"]
    spec["trace"]["n_jobs"] = n_jobs
    spec["seeds"] = list(range(seeds))
    spec["sweep"] = {"load": [0.5 + i / 10 for i in range(points)]}
    spec["headline"] = 0.5
    need = -(-(600 * 2 ** 20 + n_jobs * (2000 + 300 * seeds * points) + 64 * 400) // 2 ** 20)
    if need <= 24_000:
        cfg.check(config, SCHEMA)
        return
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, SCHEMA)
    assert (f"\n  simulation.scenario_specs.poisson: a simulate job of this scenario needs about {need} MB "
            f"({n_jobs} jobs x {seeds * points} runs (seeds x sweep points) kept in one process, 64 GPUs;") in str(err.value)


@pytest.mark.slow
def test_each_simulate_job_declares_the_memory_its_scenario_needs(default_dry_run):
    jobs = [job for job in planned(default_dry_run.stdout) if job["rule"] == "simulate"]
    assert jobs
    for job in jobs:
        scenario = re.search(r"scenario=([^,]+)", job["wildcards"])[1]
        need = footprint.simulate_mb(DEFAULT["simulation"]["scenario_specs"][scenario])
        assert f"mem_mb={need}," in job["resources"], (scenario, job["resources"])
