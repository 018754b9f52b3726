"""The Snakemake workflow: lint, dry runs, one real CI run from the mirror, nbval, a corrupted mirror."""

import json
import os
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

pytestmark = pytest.mark.slow  # every test here starts Snakemake (seconds), one runs the CI workflow (minutes)

from workflow_run import CI_CONFIG, REPO, run, snakemake, together  # noqa: E402


def test_lint_is_clean():
    result = run([sys.executable, "-m", "snakemake", "--lint"], cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Congratulations, your workflow is in a good condition!" in result.stdout + result.stderr


@pytest.mark.parametrize("dry_run", ["default_dry_run", "ci_dry_run"], ids=["default", "ci"])
def test_dry_run_plans_every_stage(request, dry_run):
    result = request.getfixturevalue(dry_run)  # the whole workflow from nothing (tests/conftest.py)
    assert result.returncode == 0, result.stdout + result.stderr
    for rule in ("download", "data_tables", "all"):
        assert rule in result.stdout


def test_nested_command_line_config_is_typed_then_validated(tmp_path):
    """`--config` hands nested values over as text: numbers become numbers, nonsense is still refused.
    (Seeds [0, 3]: egat runs seed 0 only, and a model's seeds must be among the stage's.)"""
    ok, bad = together(lambda: snakemake("-n", "--config", 'predictors={"workers": 1, "seeds": [0, 3]}', cwd=tmp_path),
                       lambda: snakemake("-n", "--config", 'predictors={"workers": "many"}', cwd=tmp_path))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert bad.returncode != 0
    assert "'many' is not of type 'integer'" in bad.stdout + bad.stderr


def test_ci_run_writes_tables_and_figures(ci_run):
    pairs = pd.read_parquet(ci_run / "data/processed/pairs.parquet")
    assert pairs.groupby("device").size().to_dict() == {"k80": 351, "p100": 351, "v100": 351}
    trace = pd.read_parquet(ci_run / "data/processed/trace.parquet")
    assert len(trace) == 2000 and set(trace["cluster"]) == {"6214e9"}
    for figure in ("figures/data/interference_heatmap.png", "figures/data/trace.png"):
        assert (ci_run / figure).stat().st_size > 10_000
    assert (ci_run / "results/notebooks/00_data.ipynb").exists()


def test_ci_run_is_complete_and_a_rerun_has_nothing_to_do(ci_run, mirror):
    result = snakemake("-n", "--configfile", str(CI_CONFIG), cwd=ci_run, mirror=mirror)
    assert result.returncode == 0 and "Nothing to be done" in result.stdout + result.stderr


def test_every_file_the_ci_run_wrote_is_a_declared_output_or_log(ci_run, mirror):
    """Nothing a notebook writes escapes the workflow: each file under data/processed, figures and results is an
    output (a file, or inside a directory output) or a log of some rule."""
    result = snakemake("--summary", "--configfile", str(CI_CONFIG), cwd=ci_run, mirror=mirror)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split("\t") for line in result.stdout.splitlines()[1:] if "\t" in line]
    declared = {row[0] for row in rows} | {log for row in rows for log in row[3].split(", ") if log and log != "-"}
    written = {str(p.relative_to(ci_run)) for part in ("data/processed", "figures", "results")
               for p in (ci_run / part).rglob("*") if p.is_file()}
    undeclared = sorted(f for f in written if f not in declared and not any(f.startswith(d + "/") for d in declared))
    assert len(written) > 40 and not undeclared, undeclared


def executed_notebook(workdir, stem):
    """The CI run's execution of notebook ``stem``: results/notebooks/<stem>.ipynb, or for a rule that fans out
    over wildcards (results/notebooks/<stem>/.../*.ipynb) the first of its executions."""
    single = workdir / "results" / "notebooks" / f"{stem}.ipynb"
    fanned = sorted((workdir / "results" / "notebooks" / stem).rglob("*.ipynb"))
    assert single.exists() or fanned, f"the CI run did not execute notebooks/{stem}.ipynb"
    return single if single.exists() else fanned[0]


def not_run_by_the_ci_config() -> set[str]:
    """Notebooks whose rule runs only when configured, and the CI config (over the default) does not configure it:
    users' own data (datasets.user) and ISACPP's ablation (predictors.ablation.run, config/paper.yaml); the real
    testbed's (rule testbed, outside `all`: it needs quiet cores; tests/test_testbed_runner.py runs its script end to end);
    and a registered dataset's without a rule of its own (rule dataset_tables: none of the shipped ones;
    tests/test_datasets_registry.py runs it on a toy one)."""
    default, ci = yaml.safe_load((REPO / "config" / "config.yaml").read_text()), yaml.safe_load(CI_CONFIG.read_text())
    user = ci.get("datasets", default.get("datasets", {})).get("user")
    ablation = {**default["predictors"]["ablation"], **ci["predictors"].get("ablation", {})}["run"]
    return {stem for stem, off in (("00_user_data", not user), ("03_ablation", not ablation)) if off} | {"07_testbed", "00_dataset"}


def papermill_seconds(notebook: Path) -> float:
    """How long the CI run took to execute ``notebook`` (papermill records it)."""
    return json.loads(notebook.read_text())["metadata"]["papermill"]["duration"]


def two_halves(notebooks: list[Path]) -> list[list[Path]]:
    """The notebooks in two lists of about equal execution time, the longest first into the shorter list."""
    halves, seconds = [[], []], [0.0, 0.0]
    for notebook in sorted(notebooks, key=papermill_seconds, reverse=True):
        shorter = seconds.index(min(seconds))
        halves[shorter].append(notebook)
        seconds[shorter] += papermill_seconds(notebook)
    return halves


def nbval(ci_run: Path, workdir: Path, notebooks: list[Path]) -> subprocess.CompletedProcess:
    """nbval on the CI run's executions of ``notebooks`` (relative to the run's folder), in a copy of that folder
    where the injected relative paths hold: re-executed notebooks rewrite their outputs, which must not touch
    the CI run the other tests read."""
    shutil.copytree(ci_run, workdir, ignore=shutil.ignore_patterns(".snakemake"))
    copies = []
    for notebook in notebooks:
        copies.append(workdir / f"nbval_{len(copies):02d}_{notebook.name}")
        shutil.copy(workdir / notebook, copies[-1])
    return run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
                *[c.name for c in copies]], cwd=workdir)


def test_executed_notebooks_pass_nbval_on_the_ci_config(ci_run, tmp_path):
    """nbval re-executes each notebook as the CI run executed it (CI parameters injected) and fails on errors.
    Two nbval processes share the notebooks, each in its own copy of the CI run's folder."""
    executed = [executed_notebook(ci_run, source.stem) for source in sorted((REPO / "notebooks").glob("*.ipynb"))
                if source.stem not in not_run_by_the_ci_config()]
    halves = [[notebook.relative_to(ci_run) for notebook in half] for half in two_halves(executed)]
    for result in together(*[partial(nbval, ci_run, tmp_path / f"nbval{i}", half) for i, half in enumerate(halves)]):
        assert result.returncode == 0, result.stdout[-6000:]
        assert " passed" in result.stdout and " failed" not in result.stdout


def test_corrupted_mirror_stops_with_checksum_message_and_leaves_no_file(tmp_path, mirror):
    bad_mirror = tmp_path / "mirror"
    shutil.copytree(mirror, bad_mirror)
    target = bad_mirror / "philly" / "philly.csv"
    target.chmod(0o644)
    data = bytearray(target.read_bytes())
    data[1000] ^= 0x01
    target.write_bytes(bytes(data))
    workdir = tmp_path / "work"
    workdir.mkdir()
    # the target goes first: --configfile takes every value after it
    result = snakemake("data/raw/philly/philly.csv", "--configfile", str(CI_CONFIG), cwd=workdir, mirror=bad_mirror)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "philly/philly.csv: checksum mismatch" in output
    assert "expected sha256 ebffb3dd1589bdf4e7bcd74496201c5ded1d557d498ee14f560463f37ec353da" in output
    assert [p for p in (workdir / "data" / "raw").rglob("*") if p.is_file()] == []


NEW_POLICY = '''"""Last come, first served on whole GPUs: a policy added in one file (tests/test_workflow.py)."""
from coloc.policies.base import Policy, place_exclusive, register


@register("lifo-test")
class LastInFirstOut(Policy):
    def queue_key(self, job) -> tuple:
        return (-job.submit_time, -job.job_id)

    def schedule(self, view) -> None:
        while view.queue:
            job = view.queue.best(view.cluster.max_free())
            if job is None or not place_exclusive(view, job):
                return
'''


def planned_jobs(output: str) -> dict[str, int]:
    """rule -> count from the job stats table of a run (what it plans, printed before it runs anything)."""
    lines = output.split("Job stats:", 1)[1].splitlines()[3:]  # after the header and its rule
    rows = [line.split() for line in lines[:next(i for i, line in enumerate(lines) if not line.strip())]]
    return {row[0]: int(row[1]) for row in rows if row[0] != "total"}


def copy_snakemake(repo, workdir, *args):
    env_run = [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "--cores", "2", *args]
    env = dict(os.environ, PYTHONPATH=str(repo / "lib"))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return subprocess.run(env_run, cwd=workdir, env=env, capture_output=True, text=True, timeout=900)


def test_editing_a_predictor_module_reruns_the_predictors_and_what_reads_them_only(ci_copy):
    repo, workdir = ci_copy
    assert "Nothing to be done" in copy_snakemake(repo, workdir, "-n", "--configfile", str(CI_CONFIG)).stdout
    (repo / "lib/coloc/predict/egat.py").touch()
    result = copy_snakemake(repo, workdir, "-n", "--configfile", str(CI_CONFIG))
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = planned_jobs(result.stdout)
    assert not {"download", "data_tables", "features", "profiling"} & set(jobs), jobs
    assert jobs.get("predictors", 0) >= 1 and "simulation_figures" in jobs, jobs
    default = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["simulation"]
    ci = yaml.safe_load(CI_CONFIG.read_text())["simulation"]  # merged over the default: maps merge, lists replace
    specs = {name: {**default["scenario_specs"][name], **ci["scenario_specs"].get(name, {})}
             for name in ci.get("scenarios", default["scenarios"])}
    runs = sum(len(spec["policies"]) for spec in specs.values())  # the simulate jobs of the CI run
    assert jobs.get("simulate", 0) < runs, \
        f"a baseline policy reads no predictions and must not rerun: {jobs}"


def test_a_policy_added_in_one_new_file_runs_through_the_simulate_rule(ci_copy):
    repo, workdir = ci_copy
    (repo / "lib/coloc/policies/lifo_test.py").write_text(NEW_POLICY)
    target = "results/sim/philly-contended/lifo-test/summary.parquet"
    # targets and --config first: --configfile takes every value after it
    args = [target, "--config", 'simulation={"scenario_specs": {"philly-contended": {"policies": ["fifo", "lifo-test"]}}}',
            "--configfile", str(CI_CONFIG)]
    result = copy_snakemake(repo, workdir, *args)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert planned_jobs(result.stdout + result.stderr) == {"simulate": 1}  # the plan it printed before running
    summary = pd.read_parquet(workdir / target)
    assert summary[["policy", "kind"]].drop_duplicates().values.tolist() == [["lifo-test", "baseline"]]
    jobs = pd.read_parquet(workdir / target.replace("summary", "jobs"))
    fifo = pd.read_parquet(workdir / "results/sim/philly-contended/fifo/jobs.parquet")
    assert len(jobs) == len(fifo) and jobs["finish_time"].notna().all()
    assert not (workdir / "results/sim/philly-contended/lifo-test/runs").exists()  # cleared once saved
    assert not np.allclose(jobs.sort_values("job_id")["jct"], fifo.sort_values("job_id")["jct"])
