"""Shared fixtures: the data mirror, the real reference files fetched through coloc.sources, Gavel's tables,
and one real CI run of the workflow (session-wide, shared by every test module that needs it).

Figures are drawn on matplotlib's non-interactive Agg backend (coloc.plots chooses none itself).
"""

import os
import shutil
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402

from coloc import datasets, sources  # noqa: E402
from workflow_run import CI_CONFIG, snakemake  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The folder of byte-exact copies of the public data ($COLOC_DATA_MIRROR, else ../shared/data)."""
    folder = Path(os.environ.get(sources.MIRROR_ENV) or REPO.parent / "shared" / "data").resolve()
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
def ci_run(tmp_path_factory, mirror):
    """One real run of the whole workflow on config/ci.yaml, from the mirror, in a scratch folder."""
    workdir = tmp_path_factory.mktemp("ci_run")
    result = snakemake("--configfile", str(CI_CONFIG), cwd=workdir, mirror=mirror)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return workdir


@pytest.fixture
def ci_copy(ci_run, tmp_path):
    """A copy of the repository's workflow and library and of the finished CI run, times kept (nothing to do)."""
    repo, workdir = tmp_path / "repo", tmp_path / "work"
    repo.mkdir()
    for name in ("Snakefile", "environment.yml"):
        shutil.copy2(REPO / name, repo / name)
    for part in ("workflow", "config", "notebooks", "lib"):
        shutil.copytree(REPO / part, repo / part)  # copies keep their modification times
    for part in ("data", "results", "figures", "logs"):
        shutil.copytree(ci_run / part, workdir / part)
    return repo, workdir
