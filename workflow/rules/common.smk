# Shared helpers for the workflow: config validation, paths, the list of final outputs.
import json
import os
import re
import sys
from pathlib import Path

import yaml
from snakemake.utils import min_version, validate

# This workflow's own lib/ first, before anything imports coloc: with coloc installed from another clone, the
# code inputs (coloc.modules) would list that clone's files while the jobs run this one's (lib/ is first on
# their PYTHONPATH, below).
sys.path.insert(0, str(Path(workflow.basedir) / "lib"))
for _name in [m for m in sys.modules if m == "coloc" or m.startswith("coloc.")]:
    del sys.modules[_name]  # imported from elsewhere before this file ran
from coloc import modules
from coloc.config import check, check_size, typed_by_schema
from coloc.config_files import UnsafeConfigFile, check_config_file
from coloc.sources import check_fetched, sources_from_config
from coloc.writer import LAUNCHER_VARIABLE

min_version("9.0")

REPO = Path(workflow.basedir)
SCHEMA = REPO / "config" / "config.schema.yaml"
# Config files are plain data. The workflow profile (profiles/default) refuses a template (YTE), anchors and aliases
# before Snakemake reads a file; here the same check catches a run that bypassed it, after the fact (Snakemake has
# evaluated the files by now). A config of more values than any real one (aliases of `--config`, expanded) is
# refused before anything walks it.
try:
    for _path in workflow.configfiles:
        check_config_file(_path)
except UnsafeConfigFile as err:
    raise UnsafeConfigFile(f"{err}. Snakemake read this file before the workflow could check it (the workflow "
                           f"profile profiles/default, which refuses it beforehand, was not applied), so any code "
                           f"it held has run") from None
check_size(config)
# `--config` hands nested values over as text; type them by the schema, then validate. coloc.config.check
# names every mistake in one error (schema, unknown keys, policy and predictor names, cross-references).
config.update(typed_by_schema(config, yaml.safe_load(SCHEMA.read_text())))
check(config, yaml.safe_load(SCHEMA.read_text()))
validate(config, str(SCHEMA))
# A raw file already there must still be its source's: Snakemake fetches nothing that exists.
check_fetched(sources_from_config(config), "data/raw")
NOTEBOOKS = modules.workflow_path(REPO / "notebooks")
# Each rule's conda environment for --sdm conda: small, one per kind of step, pinned as requirements.txt pins
# (tests/test_envs.py checks the pins and that each holds what its rule's code imports).
ENVS = REPO / "workflow" / "envs"
# The rules' code imports coloc from this checkout's lib/ in any environment (those of workflow/envs hold the
# third-party packages only); jobs on cluster nodes inherit the variable.
if os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] != str(REPO / "lib"):
    os.environ.update(PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "lib"), os.environ.get("PYTHONPATH")])))
# Each job stops when this Snakemake is gone (killed with SIGKILL, it cannot stop them): coloc.writer.watch_launcher.
os.environ.update({LAUNCHER_VARIABLE: str(os.getpid())})
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
    depends on it, and editing any other file does not. This workflow's lib/, relative to the working
    directory where the workflow is in it (a copied run plans nothing new)."""
    return modules.code_inputs(runs, REPO / "lib" / "coloc")


def as_yaml(values):
    """Notebook parameters as a YAML (JSON) string for papermill -y; rules pass it shell-quoted ({params.x:q})."""
    return json.dumps(values)
