"""Which files of the coloc package a notebook or module runs: the workflow's code inputs.

Read statically from the import statements (``import coloc.x``, ``from coloc.x import y``,
``from coloc import x``, relative imports), followed transitively. Importing a module runs the
``__init__`` of every package above it, so those are in too; a module that discovers the modules of its
package (a registry that imports every one of them with ``pkgutil``) brings all of them.
Editing any listed file makes Snakemake rerun the rule (and what depends on its outputs), and
editing any other file does not.
"""
from __future__ import annotations

import ast
import functools
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent  # lib/coloc
PACKAGE = "coloc"


def files_of_notebook(notebook: str | Path, root: Path = ROOT) -> list[Path]:
    """The coloc files the code cells of ``notebook`` import, transitively, sorted (``root``: the package's
    folder to read them in, by default this module's own)."""
    cells = json.loads(Path(notebook).read_text())["cells"]
    source = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return _closure(_imports(ast.parse("\n".join(lines)), package=()), Path(root).resolve())


def files_of_module(module: str, root: Path = ROOT) -> list[Path]:
    """The coloc files that importing ``module`` (e.g. "coloc.cli") runs, sorted."""
    return _closure({tuple(module.split("."))[1:]}, Path(root).resolve())


def workflow_path(path: str | Path) -> Path:
    """``path`` relative to the working directory when it lies inside it (the workflow run from its own folder:
    a copy of the folder, its .snakemake included, records the same input files), else absolute."""
    path = Path(path).resolve()
    try:
        return path.relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def code_inputs(runs: str | Path, root: Path) -> list[str]:
    """The workflow's code input of a notebook (a path) or a module (e.g. "coloc.cli"): the files below
    ``root`` (the workflow's own lib/coloc, whichever coloc this process imported) that it runs, each as
    :func:`workflow_path` gives it."""
    files = files_of_notebook(runs, root) if isinstance(runs, Path) else files_of_module(runs, root)
    return [str(workflow_path(path)) for path in files]


def _closure(start: set[tuple[str, ...]], root: Path = ROOT) -> list[Path]:
    seen: set[Path] = set()
    todo = list(start)
    while todo:
        parts = todo.pop()
        for path in _files(parts, root):
            if path in seen:
                continue
            seen.add(path)
            package = path.parent.relative_to(root).parts  # the package this file is in (or is)
            stat = path.stat()
            imported, registry = _file_imports(path, package, stat.st_mtime_ns, stat.st_size)
            todo.extend(imported)
            if registry:  # a registry that imports every module of its package
                todo.extend(package + (p.stem,) for p in path.parent.glob("*.py") if p.stem != "__init__")
    return sorted(seen)


@functools.lru_cache(maxsize=None)
def _file_imports(path: Path, package: tuple[str, ...], mtime_ns: int, size: int) -> tuple[frozenset, bool]:
    """(module paths below coloc that the file imports, whether it imports every module of its package), read
    once per version of the file (its modification time and size are in the key): the workflow asks for the code
    inputs of every rule, and the rules share most of their files."""
    source = path.read_text()
    return frozenset(_imports(ast.parse(source, filename=str(path)), package)), "pkgutil" in source


def _files(parts: tuple[str, ...], root: Path = ROOT) -> list[Path]:
    """The module's file (or the package's __init__) and the __init__ of every package above it."""
    out = [root / "__init__.py"]
    for depth in range(1, len(parts) + 1):
        base = root.joinpath(*parts[:depth])
        if (base / "__init__.py").is_file():
            out.append(base / "__init__.py")
        elif base.with_suffix(".py").is_file() and depth == len(parts):
            out.append(base.with_suffix(".py"))
        else:
            return out  # a name inside a module (a function or class), not a module
    return out


def _imports(tree: ast.AST, package: tuple[str, ...]) -> set[tuple[str, ...]]:
    """Module paths below coloc (as tuples) that ``tree`` imports; ``package`` resolves relative imports."""
    found: set[tuple[str, ...]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(_below(alias.name.split(".")) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - node.level + 1]) + (node.module or "").split(".")
                base = [PACKAGE] + [p for p in base if p]
            else:
                base = (node.module or "").split(".")
            found.add(_below(base))
            found.update(_below(base + [alias.name]) for alias in node.names)
    found.discard(None)
    return found


def _below(names: list[str]) -> tuple[str, ...] | None:
    return tuple(names[1:]) if names and names[0] == PACKAGE else None
