"""Each rule runs in a small conda environment of workflow/envs/ that holds what its code imports, pinned as
requirements.txt pins it; each rule declares the resources a cluster job requests (mem_mb, runtime, CPUs).

What a rule imports is read statically: the code cells of its notebook (or the module its shell command runs)
and every coloc module they import, transitively (coloc.modules). What an environment provides is its pinned
packages and their dependencies, as installed in this (development) environment, which has the same pins."""

import ast
import json
import re
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from coloc import modules

REPO = Path(__file__).resolve().parents[1]
ENVS = REPO / "workflow" / "envs"
RULE_FILES = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
# A module imported by no code but needed at run time: pandas reads and writes parquet through pyarrow; a
# notebook rule runs papermill with an IPython kernel.
RUNTIME_NEEDS = {"pandas": {"pyarrow"}}
NOTEBOOK_NEEDS = {"papermill", "ipykernel"}


def env_pins(path: Path) -> dict[str, str]:
    deps = yaml.safe_load(path.read_text())["dependencies"]
    pip = next(d["pip"] for d in deps if isinstance(d, dict))
    return {Requirement(line).name.lower(): str(Requirement(line).specifier).removeprefix("==") for line in pip}


def requirement_pins() -> dict[str, str]:
    lines = [line.split("#", 1)[0].strip() for line in (REPO / "requirements.txt").read_text().splitlines()]
    return {Requirement(line).name.lower(): str(Requirement(line).specifier).removeprefix("==")
            for line in lines if line}


@cache
def rules() -> dict[str, str]:
    """rule name -> the text of its block, for every rule of the workflow that runs a command."""
    out = {}
    for path in RULE_FILES:
        # a rule at the top level or inside an `if` (its body is indented deeper than its `rule` line)
        for match in re.finditer(r"^(?P<indent>[ \t]*)rule (?P<name>\w+):\n(?P<body>(?:(?P=indent)[ \t]+.*\n|\n)*)",
                                 path.read_text(), re.MULTILINE):
            if re.search(r"^\s+(shell|script|run|notebook):", match.group("body"), re.MULTILINE):
                out[match.group("name")] = match.group("body")
    return out


@cache
def distributions_by_module() -> dict[str, list[str]]:
    return metadata.packages_distributions()


@cache
def top_level_imports(source: str) -> frozenset[str]:
    """Top-level module names that ``source`` imports (absolute imports; relative ones stay inside coloc)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return frozenset(names)


@cache
def coloc_files(notebook_or_module: str) -> tuple[Path, ...]:
    if notebook_or_module.endswith(".ipynb"):
        return tuple(modules.files_of_notebook(REPO / "notebooks" / notebook_or_module))
    return tuple(modules.files_of_module(notebook_or_module))


def notebook_code(notebook: str) -> str:
    cells = json.loads((REPO / "notebooks" / notebook).read_text())["cells"]
    return "\n".join(line for c in cells if c["cell_type"] == "code" for line in "".join(c["source"]).splitlines()
                     if not line.lstrip().startswith(("%", "!")))


def imported_distributions(body: str) -> set[str]:
    """The third-party distributions the rule's code imports (notebook cells and coloc modules, transitively)."""
    notebooks = re.findall(r'NOTEBOOKS\s*/\s*"([\w.-]+\.ipynb)"', body)
    sources = [notebook_code(n) for n in notebooks]
    files = {f for entry in notebooks + re.findall(r'code_of\("([\w.]+)"\)', body) for f in coloc_files(entry)}
    sources += [f.read_text() for f in sorted(files)]
    names = {n for source in sources for n in top_level_imports(source)}
    names = {n for n in names if n not in sys.stdlib_module_names and n != "coloc"}
    by_module = distributions_by_module()
    missing = sorted(n for n in names if n not in by_module)
    assert not missing, f"imported by no installed distribution: {missing}"
    return {dist.lower() for n in names for dist in by_module[n]}


@cache
def provided(pins: frozenset[str]) -> set[str]:
    """The pinned distributions and everything they require (extras left out), as installed here."""
    seen, todo = set(), list(pins)
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        for line in metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return seen


def rule_env(body: str) -> Path:
    found = re.findall(r'conda:\s*\n\s*ENVS\s*/\s*"([\w.-]+\.yaml)"', body)
    assert len(found) == 1, "expected `conda: ENVS / \"<name>.yaml\"`"
    return ENVS / found[0]


def test_every_env_pins_exactly_what_requirements_pins():
    requirements = requirement_pins()
    envs = sorted(ENVS.glob("*.yaml"))
    assert len(envs) >= 3
    for path in envs:
        pins = env_pins(path)
        assert "python=3.11" in yaml.safe_load(path.read_text())["dependencies"], path.name
        wrong = {name: version for name, version in pins.items() if requirements.get(name) != version}
        assert not wrong, f"{path.name}: {wrong} differ from requirements.txt"


@pytest.mark.parametrize("rule", sorted(rules()))
def test_rule_env_holds_what_its_code_imports(rule):
    body = rules()[rule]
    env = rule_env(body)
    have = provided(frozenset(env_pins(env)))
    need = imported_distributions(body)
    need |= {extra for dist in need for extra in RUNTIME_NEEDS.get(dist, set())}
    if "NOTEBOOKS" in body:
        need |= NOTEBOOK_NEEDS
    assert not need - have, f"rule {rule}: {env.name} lacks {sorted(need - have)}"


def test_envs_are_smaller_than_the_development_environment():
    """The point of the split: no rule's environment carries the development tools, and the simulation runs
    (the many jobs of a sweep) need no torch."""
    development = {"jupyterlab", "pytest", "nbval", "hypothesis"}
    for path in ENVS.glob("*.yaml"):
        assert not development & set(env_pins(path)), path.name
    assert "torch" not in provided(frozenset(env_pins(rule_env(rules()["simulate"]))))


@pytest.mark.parametrize("rule", sorted(rules()))
def test_rule_declares_cluster_resources(rule):
    body = rules()[rule]
    block = re.search(r"^(?P<indent>[ \t]+)resources:\n(?P<lines>(?:(?P=indent)[ \t]+.*\n)+)", body, re.MULTILINE)
    assert block, f"rule {rule} declares no resources"
    keys = set(re.findall(r"^\s+(\w+)=", block.group("lines"), re.MULTILINE))
    assert {"mem_mb", "runtime"} <= keys, f"rule {rule}: resources {sorted(keys)}"
    assert "cpus_per_task" in keys or re.search(r"^\s+threads:", body, re.MULTILINE), \
        f"rule {rule}: neither cpus_per_task nor threads"
