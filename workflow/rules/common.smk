# Shared helpers for the workflow: config validation, paths, the list of final outputs.
import json
import re
from pathlib import Path

import yaml
from snakemake.utils import min_version, validate

from coloc.config import typed_by_schema

min_version("9.0")

REPO = Path(workflow.basedir)
SCHEMA = REPO / "config" / "config.schema.yaml"
# `--config` hands nested values over as text; type them by the schema, then validate.
config.update(typed_by_schema(config, yaml.safe_load(SCHEMA.read_text())))
validate(config, str(SCHEMA))
NOTEBOOKS = REPO / "notebooks"
ENV = REPO / "environment.yml"
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


def mirror_option():
    """The --mirror option of `coloc fetch` from the config (COLOC_DATA_MIRROR still wins)."""
    mirror = config.get("mirror")
    return f"--mirror {mirror}" if mirror else ""


LIBRARY = REPO / "lib" / "coloc"


def library(*names):
    """The library files a rule runs, so that editing one reruns the rule: modules or packages of lib/coloc
    ("predict" is every module of coloc.predict, "sim/engine" one module); the package's __init__ is always in."""
    files = {LIBRARY / "__init__.py"}
    for name in names:
        path = LIBRARY / name
        if path.is_dir():
            files.update(path.rglob("*.py"))
        elif path.with_suffix(".py").is_file():
            files.add(path.with_suffix(".py"))
        else:
            raise ValueError(f"library({name!r}): no module or package lib/coloc/{name}")
    return sorted(str(f.relative_to(REPO)) for f in files)


def as_yaml(values):
    """Notebook parameters as a YAML (JSON) string for papermill -y."""
    return json.dumps(values)
