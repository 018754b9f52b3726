"""coloc.modules: the library files a notebook runs (the workflow's code inputs) are exact and stable."""

import os
import subprocess
import sys
from pathlib import Path

from coloc import modules

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"


def names(files) -> set[str]:
    return {str(f.relative_to(modules.ROOT)) for f in files}


def test_a_notebook_runs_the_modules_it_imports_and_theirs_only():
    data = names(modules.files_of_notebook(NOTEBOOKS / "00_data.ipynb"))
    assert {"__init__.py", "datasets/__init__.py", "datasets/gavel.py", "datasets/philly.py", "params.py",
            "plots/__init__.py", "plots/data.py"} <= data
    assert not {f for f in data if f.startswith(("predict/", "sim/", "policies/", "profiler/"))}


def test_a_registry_that_imports_every_module_of_its_package_brings_them_all():
    predictors = names(modules.files_of_notebook(NOTEBOOKS / "03_predictors.ipynb"))
    every = {f"predict/{p.name}" for p in (modules.ROOT / "predict").glob("*.py")}
    assert every <= predictors
    simulation = names(modules.files_of_notebook(NOTEBOOKS / "04_simulation.ipynb"))
    assert {f"policies/{p.name}" for p in (modules.ROOT / "policies").glob("*.py")} <= simulation
    assert "sim/engine.py" in simulation and not {f for f in simulation if f.startswith("predict/")}


def test_imports_inside_the_package_are_followed():
    cli = names(modules.files_of_module("coloc.cli"))
    assert cli == {"__init__.py", "cli.py", "sources.py"}


def test_the_list_is_the_same_whatever_the_hash_seed():
    code = ("from coloc import modules; "
            "print(len(modules.files_of_notebook('notebooks/03_predictors.ipynb')))")
    counts = {subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                             env=dict(os.environ, PYTHONHASHSEED=str(seed)), check=True).stdout
              for seed in range(4)}
    assert len(counts) == 1


def test_no_import_cycle_inside_the_package():
    """The imports between coloc's modules, at the top or inside a function, form no cycle."""
    import ast

    graph = {}
    for path in modules.ROOT.rglob("*.py"):
        package = path.parent.relative_to(modules.ROOT).parts
        tree = ast.parse(path.read_text())
        targets = {f for parts in modules._imports(tree, package) for f in modules._files(parts)[-1:]}
        # a package above this file is already being imported when it runs (`from . import x`): no edge
        graph[path] = {f for f in targets if not (f.name == "__init__.py" and f.parent in path.parents)} - {path}
    done, active = set(), []

    def visit(node):
        if node in active:
            cycle = active[active.index(node):] + [node]
            raise AssertionError("import cycle: " + " -> ".join(str(p.relative_to(modules.ROOT)) for p in cycle))
        if node in done:
            return
        active.append(node)
        for nxt in graph.get(node, ()):
            visit(nxt)
        active.pop()
        done.add(node)

    for node in sorted(graph):
        visit(node)
    assert len(graph) > 60


def test_code_inputs_are_the_workflows_own_lib_relative_to_the_working_directory(tmp_path, monkeypatch):
    """Another clone's coloc imported (installed editable from there): the code inputs are still this
    workflow's lib/ files, and relative where the workflow is the working directory, so a copied run
    (its .snakemake included) records the same inputs."""
    import shutil

    clone = tmp_path / "clone"
    shutil.copytree(REPO / "lib" / "coloc", clone / "lib" / "coloc", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(NOTEBOOKS, clone / "notebooks")
    monkeypatch.chdir(clone)
    notebook = modules.workflow_path(clone / "notebooks" / "02_features.ipynb")
    assert notebook == Path("notebooks/02_features.ipynb")
    code = modules.code_inputs(notebook, clone / "lib" / "coloc")
    assert "lib/coloc/features.py" in code and all(c.startswith("lib/coloc/") for c in code), code
    assert modules.code_inputs("coloc.cli", clone / "lib" / "coloc") == [
        "lib/coloc/__init__.py", "lib/coloc/cli.py", "lib/coloc/sources.py"]
    monkeypatch.chdir(tmp_path / "clone" / "notebooks")  # the workflow outside the working directory: absolute
    assert modules.code_inputs("coloc.cli", clone / "lib" / "coloc")[0] == str(clone / "lib/coloc/__init__.py")


def test_the_workflow_puts_its_own_lib_first_before_it_imports_coloc():
    lines = (REPO / "workflow" / "rules" / "common.smk").read_text().splitlines()
    first_import = next(i for i, line in enumerate(lines) if line.startswith(("from coloc", "import coloc")))
    insert = next(i for i, line in enumerate(lines) if line.startswith("sys.path.insert(0,"))
    assert insert < first_import and '"lib"' in lines[insert]


def test_a_file_edited_between_two_calls_is_read_again(tmp_path):
    """Each file is parsed once per version (the workflow asks for every rule's inputs): an import added to a
    file after a first call is followed by the next call."""
    import shutil

    root = tmp_path / "coloc"
    shutil.copytree(modules.ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    before = {p.name for p in modules.files_of_module("coloc.cli", root)}
    assert before == {"__init__.py", "cli.py", "sources.py"}
    cli = root / "cli.py"
    cli.write_text(cli.read_text() + "\nfrom coloc import stats  # noqa: E402,F401\n")
    assert {p.name for p in modules.files_of_module("coloc.cli", root)} == before | {"stats.py"}


# The library's layers, bottom to top. A module imports only from its own layer or those below it: the engine
# (``sim/``) and everything else in the first layer never reach a policy, and policies never reach a study.
LAYERS = (
    ("the engine and its inputs", ()),  # everything not named in a layer above
    ("policies", ("policies/",)),
    ("studies", ("studies/",)),
    ("users of studies", ("claims.py", "claims_map.py", "cli.py", "config.py", "plots/", "readme.py", "testbed/")),
)


def layer_of(relative: str) -> int:
    return max((rank for rank, (_, prefixes) in enumerate(LAYERS) if relative.startswith(prefixes)), default=0)


def upward_imports(root) -> list[str]:
    """Every import inside the package (top of a file or inside a function) that runs to a higher layer."""
    import ast

    found = []
    for path in sorted(root.rglob("*.py")):
        relative = str(path.relative_to(root))
        tree = ast.parse(path.read_text())
        package = path.parent.relative_to(root).parts
        for parts in sorted(modules._imports(tree, package)):  # (a set: its order follows the hash seed)
            for target in modules._files(parts, root)[-1:]:
                name = str(target.relative_to(root))
                if layer_of(name) > layer_of(relative):
                    found.append(f"{relative} imports {name} ({LAYERS[layer_of(name)][0]} above "
                                 f"{LAYERS[layer_of(relative)][0]})")
    return sorted(found)  # _imports gives a set: its order follows the hash seed


def test_the_librarys_imports_run_one_way_down_the_layers():
    assert upward_imports(modules.ROOT) == []
    assert layer_of("sim/engine.py") == 0 and layer_of("policies/coloc.py") == 1
    assert layer_of("studies/experiment.py") == 2


def test_a_module_below_policies_that_imports_one_is_caught(tmp_path):
    import shutil

    root = tmp_path / "coloc"
    shutil.copytree(modules.ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    engine = root / "sim" / "engine.py"
    engine.write_text(engine.read_text() + "\n\ndef late():\n    from coloc.policies import coloc  # noqa: F401\n")
    assert upward_imports(root) == [
        "sim/engine.py imports policies/__init__.py (policies above the engine and its inputs)",
        "sim/engine.py imports policies/coloc.py (policies above the engine and its inputs)"]
