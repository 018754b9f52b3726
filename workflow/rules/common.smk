# Shared helpers for the workflow: config validation, paths, the list of final outputs.
import json
import os
import re
from pathlib import Path

import yaml
from snakemake.utils import min_version, validate

from coloc import modules
from coloc.config import check, typed_by_schema
from coloc.sources import check_fetched, sources_from_config

min_version("9.0")

REPO = Path(workflow.basedir)
SCHEMA = REPO / "config" / "config.schema.yaml"
# `--config` hands nested values over as text; type them by the schema, then validate. coloc.config.check
# names every mistake in one error (schema, unknown keys, policy and predictor names, cross-references).
config.update(typed_by_schema(config, yaml.safe_load(SCHEMA.read_text())))
check(config, yaml.safe_load(SCHEMA.read_text()))
validate(config, str(SCHEMA))
# A raw file already there must still be its source's: Snakemake fetches nothing that exists.
check_fetched(sources_from_config(config), "data/raw")
NOTEBOOKS = REPO / "notebooks"
# Each rule's conda environment for --sdm conda: small, one per kind of step, pinned as requirements.txt pins
# (tests/test_envs.py checks the pins and that each holds what its rule's code imports).
ENVS = REPO / "workflow" / "envs"
# The rules' code imports coloc from this checkout's lib/ in any environment (those of workflow/envs hold the
# third-party packages only); jobs on cluster nodes inherit the variable.
if os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] != str(REPO / "lib"):
    os.environ.update(PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "lib"), os.environ.get("PYTHONPATH")])))
# Every rule file appends the final figures and tables it makes; rule all asks for them.
ALL_OUTPUTS = []

SOURCES = config["sources"]
SOURCE_BY_FILE = {entry["file"]: entry for entry in SOURCES.values()}


def raw_path(name):
    """Where the source ``name`` of the config lands."""
    return f"data/raw/{SOURCES[name]['file']}"


def source_url(wildcards):
    return SOURCE_BY_FILE[wildcards.file]["url"]


def source_sha256(wildcards):
    return SOURCE_BY_FILE[wildcards.file]["sha256"]


def code_of(runs):
    """The lib/coloc files a notebook (a path) or a module (e.g. "coloc.cli") runs, by its imports followed
    transitively (coloc.modules): a rule's code input, so that editing one of them reruns the rule and what
    depends on it, and editing any other file does not."""
    if isinstance(runs, Path):
        return [str(path) for path in modules.files_of_notebook(runs)]
    return [str(path) for path in modules.files_of_module(runs)]


def as_yaml(values):
    """Notebook parameters as a YAML (JSON) string for papermill -y; rules pass it shell-quoted ({params.x:q})."""
    return json.dumps(values)
