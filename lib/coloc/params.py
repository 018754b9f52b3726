"""Notebook parameters: each value checked against the type its `parameters` cell declares.

A notebook's parameters cell declares ``name: type = default  # comment``; papermill injects new
values after it. ``check(globals())`` in the next cell refuses a value of the wrong type at once,
naming the parameter, the value and the declared type (not deep inside pandas later). ``Outputs``
makes a notebook's output files appear all together, only when the notebook succeeds.
Supported annotations: str, int, float (an int is accepted), bool, list, dict, ``list[T]``,
``dict[K, V]``, ``Optional[T]`` and ``A | B``.
"""
from __future__ import annotations

import os
import types
import typing
import uuid
from pathlib import Path


class ParameterError(TypeError):
    """A notebook parameter whose value does not have its declared type."""


def check(namespace: dict) -> None:
    """Check every annotated name of ``namespace`` (a notebook's globals()) against its annotation. Every notebook
    calls it first, so it also ties a workflow job to the Snakemake that started it (the job stops when that
    Snakemake is gone: :func:`coloc.writer.watch_launcher`)."""
    from coloc.writer import watch_launcher

    watch_launcher()
    problems = [f"{name} = {namespace[name]!r} is not {_name(kind)}"
                for name, kind in namespace.get("__annotations__", {}).items()
                if name in namespace and not matches(namespace[name], kind)]
    if problems:
        raise ParameterError("notebook parameters of the wrong type: " + "; ".join(problems))


def matches(value, kind) -> bool:
    """Whether ``value`` has the type ``kind`` (an annotation object)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is typing.Any:
        return True
    if kind is None or kind is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(matches(value, arg) for arg in args)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is list:
        return isinstance(value, list) and all(matches(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(matches(k, args[0]) and matches(v, args[1])
                                               for k, v in value.items())
    if isinstance(kind, type):
        return isinstance(value, kind)
    raise ParameterError(f"parameter annotation {kind!r} is not supported; use str, int, float, bool, list, "
                         f"dict, list[T], dict[K, V], Optional[T] or A | B")


def _name(kind) -> str:
    return kind.__name__ if isinstance(kind, type) else str(kind).replace("typing.", "")


class Outputs:
    """A notebook's output files, all or none: each is written under a hidden staging name of its own beside its final
    path (``outputs(path)`` returns that name) and ``commit()``, the notebook's last step, moves them into
    place. A run that fails before it leaves none of this run's files at the output paths."""

    def __init__(self):
        self._staged: dict[Path, Path] = {}

    def __call__(self, path: str | Path) -> Path:
        final = Path(path)
        # a name of this writer's own (two runs of a notebook at once never share one); the same suffix: writers
        # infer the format from it
        staged = final.with_name(f".partial-{os.getpid()}-{uuid.uuid4().hex[:8]}-{final.name}")
        final.parent.mkdir(parents=True, exist_ok=True)
        self._staged[final] = staged
        return staged

    def commit(self) -> list[Path]:
        """Move every staged file to its final path; refuse if one was never written."""
        missing = [str(final) for final, staged in self._staged.items() if not staged.exists()]
        if missing:
            raise FileNotFoundError(f"outputs {missing} were announced but never written")
        for final, staged in self._staged.items():
            os.replace(staged, final)
        return list(self._staged)
