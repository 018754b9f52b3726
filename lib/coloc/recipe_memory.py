"""The optimizer state a job type's training recipe keeps per parameter, read off the zoo (needs torch).

Kept apart from coloc.memory, which the simulation imports without torch: only the memory rule builds the
recipes' optimizers.
"""
from __future__ import annotations

from collections.abc import Iterable

import torch

from coloc import workloads


def optimizer_slots(optimizer: torch.optim.Optimizer) -> tuple[str, int]:
    """(name, state tensors per parameter) of a torch optimizer: SGD 1 with momentum else 0, Adam/AdamW 2 (3 with
    amsgrad); another optimizer is refused, naming it."""
    name = type(optimizer).__name__
    defaults = optimizer.defaults
    if name == "SGD":
        return name, int(defaults.get("momentum", 0.0) != 0.0)
    if name in ("Adam", "AdamW"):
        return name, 3 if defaults.get("amsgrad", False) else 2
    raise ValueError(f"coloc.recipe_memory: optimizer {name} has no known state size; expected SGD, Adam or AdamW")


def recipe_optimizer(workload: str) -> tuple[str, int]:
    """(optimizer name, state tensors per parameter) of a job type's training recipe (coloc.workloads)."""
    dummy = torch.nn.Parameter(torch.zeros(1))
    return optimizer_slots(workloads.recipe(workload).optimizer([dummy]))


def optimizers(names: Iterable[str]) -> dict[str, tuple[str, int]]:
    """{job type: (optimizer name, state tensors per parameter)} for `names`."""
    return {name: recipe_optimizer(name) for name in names}
