"""Shared fixtures: the data mirror, the real reference files fetched through coloc.sources, Gavel's tables,
and one real CI run of the workflow (session-wide, shared by every test module that needs it).

The two long runs go on in the background while other tests run: the CI run starts before the first test (when
a test to run needs it), the SLURM test's sweep as soon as the CI run has ended (tests/slurm_sweep.py); the SLURM
test runs last. Under pytest-xdist (the README's test command runs the tests in two processes) the first worker
to start runs them for all: the others read their results from files (workflow_run.SharedRun).

Figures are drawn on matplotlib's non-interactive Agg backend (coloc.plots chooses none itself).
"""

import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import slurm_sweep  # noqa: E402
import yaml  # noqa: E402
from workflow_run import CI_CONFIG, SharedRun, copy_workflow_and_run, snakemake_command  # noqa: E402

from coloc import datasets, features, sources  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
# The CI run's longest chain first (profiling, the predictors, their figures; --prioritize gives a target and what
# it needs the highest priority), the simulations filling the gaps: the same jobs and outputs, in less time.
CI_RUN_ARGS = ("--prioritize", "figures/predictors/gavel_random5_scatter.png", "--configfile", str(CI_CONFIG))
CI_RUN = pytest.StashKey[SharedRun]()
SWEEP = pytest.StashKey[slurm_sweep.Sweep]()


@pytest.fixture
def policy_module(tmp_path, monkeypatch):
    """``write(name, source)``: a new policy module where ``coloc.policies`` finds its modules (a temporary folder
    on its path), as a user would add one; returns its module name. The registry and its presets are copies for
    the test, so what the module registers leaves with it, and so does the module."""
    import coloc.policies
    from coloc.policies import base

    coloc.policies.names()  # the package's own modules registered first: the copies below hold them
    monkeypatch.setattr(coloc.policies, "__path__", [*coloc.policies.__path__, str(tmp_path)])
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))
    monkeypatch.setattr(base, "_PRESETS", dict(base._PRESETS))
    written = []

    def write(name: str, source: str) -> str:
        (tmp_path / f"{name}.py").write_text(source)
        written.append(f"coloc.policies.{name}")
        return written[-1]

    yield write
    for module in written:
        sys.modules.pop(module, None)


def pytest_collection_modifyitems(items):
    """tests/test_slurm.py runs last: its sweep runs in the background meanwhile (fixture ci_run)."""
    items.sort(key=lambda item: item.path.name == "test_slurm.py")  # stable: the order is kept otherwise


def mirror_folder() -> Path:
    return Path(os.environ.get(sources.MIRROR_ENV) or REPO.parent / "shared" / "data").resolve()


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The folder of byte-exact copies of the public data ($COLOC_DATA_MIRROR, else ../shared/data)."""
    folder = mirror_folder()
    if not folder.is_dir():
        pytest.fail(f"data mirror {folder} not found: set {sources.MIRROR_ENV} to a folder with the reference files")
    return folder


@pytest.fixture(scope="session")
def raw_files(mirror, tmp_path_factory) -> dict[str, Path]:
    """Every configured source, fetched from the mirror and checksummed, by source name."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    raw = tmp_path_factory.mktemp("raw")
    return {name: sources.fetch(src, raw, mirror) for name, src in sources.sources_from_config(config).items()}


@pytest.fixture(scope="session")
def gavel(raw_files) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Gavel's (solo, pairs) tables, parsed from the checksummed copy of the mirror (do not modify them)."""
    return datasets.load_gavel(raw_files["gavel_throughputs"])


@pytest.fixture(scope="session")
def workloads_of():
    """features.workloads_table of some job types, each job type's features extracted once in the session: the
    predictor tests of several modules build their inputs on the same Gavel job types. A table covering the names
    asked for is filtered (rows are per job type); each call returns a copy."""
    tables: list[pd.DataFrame] = []

    def table(names) -> pd.DataFrame:
        wanted = set(names)
        cover = next((t for t in tables if wanted <= set(t["workload"])), None)
        if cover is None:
            cover = features.workloads_table(wanted)
            tables.append(cover)
        return cover[cover["workload"].isin(wanted)].reset_index(drop=True).copy()

    return table


@pytest.fixture(scope="session")
def gavel_tables_of(mirror, workloads_of):
    """The predictors' Tables of Gavel's measurements on some job types: their solo rows, the pairs of two of them,
    their features (workloads_of) and Gavel's devices; Gavel's file parsed once in the session."""
    from coloc.devices import device_table
    from coloc.predict import Tables

    solo, pairs = datasets.load_gavel(mirror / "gavel" / "simulation_throughputs.json")

    def tables(names) -> "Tables":
        return Tables(workloads_of(names), solo[solo["workload"].isin(names)].reset_index(drop=True),
                      pairs[pairs["workload_a"].isin(names) & pairs["workload_b"].isin(names)].reset_index(drop=True),
                      device_table(list(datasets.GAVEL_DEVICES)))

    return tables


def shared_dry_run(tmp_path_factory, name: str, *args) -> subprocess.CompletedProcess:
    """`snakemake -n` with ``args`` in an empty folder, without a mirror: run once for all processes of the
    session (the first to ask runs it, the others read its output: workflow_run.SharedRun)."""
    run = SharedRun(session_folder(tmp_path_factory) / name)
    run.start(snakemake_command("-n", *args))
    return run.result()


@pytest.fixture(scope="session")
def default_dry_run(tmp_path_factory):
    """`snakemake -n -p` of the whole default workflow in an empty folder, without a mirror: every job the default
    run plans, with its command (read with workflow_run.planned); one Snakemake start shared by the tests of it."""
    return shared_dry_run(tmp_path_factory, "default_dry_run", "-p")


@pytest.fixture(scope="session")
def ci_dry_run(tmp_path_factory):
    """`snakemake -n` of the whole CI workflow (config/ci.yaml) in an empty folder, without a mirror: every job the
    CI run plans (read with workflow_run.planned and needed_by); one Snakemake start shared by the tests of it."""
    return shared_dry_run(tmp_path_factory, "ci_dry_run", "--configfile", str(CI_CONFIG))


def needs_ci_run(item: pytest.Item) -> bool:
    return "ci_run" in item.fixturenames or item.path.name == "test_slurm.py"  # the SLURM test asks for it late


def under_xdist() -> bool:
    """Whether this process is one of several pytest-xdist workers of the session."""
    return bool(os.environ.get("PYTEST_XDIST_WORKER"))


def session_folder(tmp_path_factory) -> Path:
    """A folder every process of the session sees (xdist's workers each have their own base temp below it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if under_xdist() else base


def ci_run_started(config: pytest.Config, tmp_path_factory, mirror: Path, session=None) -> SharedRun:
    """The session's CI run, started now if no process of the session has: Snakemake on config/ci.yaml, from
    the mirror, in a scratch folder; followed by the SLURM test's sweep when ``session`` selects it."""
    if CI_RUN not in config.stash:
        run = SharedRun(session_folder(tmp_path_factory) / "ci_run")
        sweep = slurm_sweep.Sweep(run.workdir, run.folder) if session and slurm_sweep.selected(session) else None
        if run.start(snakemake_command(*CI_RUN_ARGS), mirror=mirror, then=sweep) and sweep is not None:
            config.stash[SWEEP] = sweep
        config.stash[CI_RUN] = run
    return config.stash[CI_RUN]


@pytest.fixture(scope="session", autouse=True)
def ci_run_starts_first(request, tmp_path_factory):
    """The CI run takes minutes: when a test to run needs it (and the mirror is there), it starts before the first
    test and goes on in the background, and so does the SLURM test's sweep after it; the fixture ci_run waits for
    it. The CI run is the session's longest chain (the tests of its outputs wait for it), so the test processes
    yield the CPU to it: they run at a lower priority (nice +5) from then on, the CI run and the sweep (started
    in a thread created before) at the priority the session was started with. At the end of the session they are
    stopped, unless other xdist workers may still read them."""
    if mirror_folder().is_dir() and any(needs_ci_run(item) for item in request.session.items):
        ci_run_started(request.config, tmp_path_factory, mirror_folder(), request.session)
        os.nice(5)  # this thread and what it starts from now on (Linux: a thread's own priority)
    yield
    if SWEEP in request.config.stash and not under_xdist():
        request.config.stash[SWEEP].stop()
    if CI_RUN in request.config.stash:
        request.config.stash[CI_RUN].finish(others_may_need_it=under_xdist())


@pytest.fixture(scope="session")
def ci_run(request, tmp_path_factory, mirror):
    """One real run of the whole workflow on config/ci.yaml, from the mirror, in a scratch folder, once it has
    ended (started before the first test by ci_run_starts_first, or now): its folder."""
    run = ci_run_started(request.config, tmp_path_factory, mirror)
    result = run.result()
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return run.workdir


@pytest.fixture
def ci_copy(ci_run, tmp_path):
    """A copy of the repository's workflow and library and of the finished CI run, times kept (nothing to do)."""
    repo, workdir = tmp_path / "repo", tmp_path / "work"
    copy_workflow_and_run(ci_run, repo, workdir)
    return repo, workdir
