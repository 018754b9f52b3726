"""Shared fixtures: the data mirror, the real reference files fetched through coloc.sources, Gavel's tables.

Figures are drawn on matplotlib's non-interactive Agg backend (coloc.plots chooses none itself).
"""

import os
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402

from coloc import datasets, sources  # noqa: E402

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
