"""The workflow refuses config mistakes and edited raw data before anything runs (real `snakemake` calls).

Each test runs Snakemake on the repository's Snakefile in a scratch folder, with a temporary
config file merged over config/config.yaml, as a user would.
"""

import copy
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from workflow_run import planned, together

from coloc import config as coloc_config

REPO = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
HOSTILE = "mirror dir; touch PWNED; echo $(touch PWNED2) `touch PWNED3` 'q\" & |"


def snakemake(workdir: Path, config: dict, *args: str, mirror: Path | None = None) -> subprocess.CompletedProcess:
    path = workdir / "extra-config.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if k != "COLOC_DATA_MIRROR"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    if mirror is not None:
        env["COLOC_DATA_MIRROR"] = str(mirror)
    return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--cores", "1",
                           *args, "--configfile", str(path)],  # --configfile last: it takes every word after it
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_dry_run_refuses_a_misspelled_section_and_an_unknown_policy_in_one_error(tmp_path):
    result = snakemake(tmp_path, {"simulaton": {"seeds": [0]}, "simulation": {"scenario_specs": {
        "poisson": {"policies": ["fifo", "cloc", "coloc~lgbn"]}}}}, "-n")
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert "config: 3 mistake(s), nothing was run" in out
    assert "simulaton: unknown key (did you mean 'simulation'?)" in out
    assert "simulation.scenario_specs.poisson.policies[1]: unknown policy 'cloc' in 'cloc'; known: ['coloc'," in out
    assert "simulation.scenario_specs.poisson.policies[2]: unknown pair predictor 'lgbn' in 'coloc~lgbn'; known: [" in out
    assert "Building DAG of jobs" not in out  # refused while reading the config, before planning


@pytest.mark.slow
def test_dry_run_refuses_a_simulation_protocol_the_predictors_stage_does_not_make(tmp_path):
    result = snakemake(tmp_path, {"simulation": {"protocol": "lofo-probe-5"}}, "-n")
    assert result.returncode != 0
    assert ("simulation.protocol: 'lofo-probe-5' is not among predictors.protocols ['random5', 'lofo', 'lojo', 'xdevice'"
            in result.stdout + result.stderr)


@pytest.mark.slow
def test_a_policy_naming_its_protocol_reads_that_protocols_predictions(default_dry_run):
    result = default_dry_run  # the default workflow planned from nothing, each job's command printed (conftest.py)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    target = "results/sim/poisson/coloc@random5/summary.parquet"
    [job] = [job for job in planned(result.stdout) if target in job["output"]]
    assert job["rule"] == "simulate" and "papermill" in job["shell"]
    assert "data/processed/predictions/gavel/random5.parquet" in job["input"]
    assert not [path for path in job["input"] if "gavel/lofo.parquet" in path]


@pytest.mark.slow
def test_the_profiled_pairs_setting_reads_the_pairs_table_and_no_predictions_and_the_world_is_passed(default_dry_run):
    result = default_dry_run
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    target = "results/sim/isacpp-testbed/isacpp@profiled-pairs/summary.parquet"
    [job] = [job for job in planned(result.stdout) if target in job["output"]]
    assert "data/processed/pairs.parquet" in job["input"]
    assert not [path for path in job["input"] if "/predictions/" in path or "/utilization/" in path]
    assert '"predictions_path": ""' in job["shell"] and '"world": "measured"' in job["shell"]
    [egat] = [job for job in planned(result.stdout)
              if "results/sim/isacpp-testbed/isacpp@random5/summary.parquet" in job["output"]]
    assert "data/processed/predictions/gavel/random5.parquet" in egat["input"]


@pytest.mark.slow
def test_an_edited_raw_file_is_refused_before_any_rule_runs(tmp_path, mirror):
    """Snakemake runs no download for a file that exists: an edited philly.csv would reach the tables."""
    raw = tmp_path / "data" / "raw" / "philly" / "philly.csv"
    raw.parent.mkdir(parents=True)
    shutil.copyfile(mirror / "philly" / "philly.csv", raw)
    with open(raw, "a") as fh:
        fh.write("2017-10-09 07:01:55,66.0,1,66.0,11cb48\n")
    result = snakemake(tmp_path, {}, "-n")
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert (f"data/raw/philly/philly.csv: sha256 {hashlib.sha256(raw.read_bytes()).hexdigest()}, "
            f"expected {CONFIG['sources']['philly_trace']['sha256']} (sources.philly_trace)") in out


@pytest.mark.slow
def test_a_mirror_path_with_shell_metacharacters_is_copied_from_and_never_run(tmp_path, mirror):
    hostile = tmp_path / HOSTILE
    (hostile / "philly").mkdir(parents=True)
    shutil.copyfile(mirror / "philly" / "philly.csv", hostile / "philly" / "philly.csv")
    work = tmp_path / "work"
    work.mkdir()
    result = snakemake(work, {"mirror": str(hostile)}, "data/raw/philly/philly.csv")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    expected = CONFIG["sources"]["philly_trace"]["sha256"]
    assert hashlib.sha256((work / "data" / "raw" / "philly" / "philly.csv").read_bytes()).hexdigest() == expected
    assert not list(tmp_path.rglob("PWNED*"))


def string_paths(node, path=()):
    """Key paths of every string value in a config."""
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in string_paths(v, path + (k,))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in string_paths(v, path + (i,))]
    return [path] if isinstance(node, str) else []


def with_suffix(config, paths, text: str):
    """A copy of ``config`` with ``text`` appended to the strings at ``paths``."""
    out = copy.deepcopy(config)
    for path in paths:
        node = out
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] += text
    return out


@pytest.mark.slow
def test_shell_metacharacters_in_every_string_field_are_refused_or_quoted_never_run(tmp_path):
    """Every string of the config made hostile: refused by name before anything runs, or, where the check lets it
    through (free text), kept whole inside one quoted word of every shell command the run would execute."""
    canary = tmp_path / "PWNED"
    text = f"; touch {canary}; echo $(touch {canary}) `touch {canary}` '\" & |"
    schema = yaml.safe_load((REPO / "config" / "config.schema.yaml").read_text())
    paths = string_paths(CONFIG)
    assert len(paths) > 40
    free = []
    for path in paths:
        try:
            coloc_config.check(with_suffix(CONFIG, [path], text), schema)
            free.append(path)
        except coloc_config.ConfigError as err:
            assert coloc_config.key_path(path) in str(err), (path, str(err))
    # every string hostile: refused; the free text ones only (URLs, licences, cluster names), with a mirror folder:
    # planned, every command printed (two Snakemake runs at once, each in its own folder)
    hostile = with_suffix(CONFIG, free, text) | {"mirror": f"/tmp/mirror{text}"}
    (tmp_path / "all").mkdir()
    (tmp_path / "free").mkdir()
    refused, planned = together(lambda: snakemake(tmp_path / "all", with_suffix(CONFIG, paths, text), "-n"),
                                lambda: snakemake(tmp_path / "free", hostile, "-n", "-p", "--forceall"))
    assert refused.returncode != 0 and "ConfigError" in refused.stdout + refused.stderr
    assert planned.returncode == 0, planned.stdout[-3000:] + planned.stderr[-3000:]
    prefix = "Shell command: "
    commands = [line[len(prefix):] for line in (planned.stdout + planned.stderr).splitlines()
                if line.startswith(prefix)]
    assert len(commands) > 10
    words = [word for command in commands for word in shlex.split(command)]
    assert any(word == f"--mirror=/tmp/mirror{text}" for word in words)
    urls = [CONFIG["sources"][name]["url"] + text for name in CONFIG["sources"]]
    assert all(url in words for url in urls) or not any(("sources", n, "url") in free for n in CONFIG["sources"])
    assert not canary.exists()
