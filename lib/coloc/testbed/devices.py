"""The testbed's devices: CUDA GPUs by index (each optionally under MPS), or this machine's CPU cores split into
core sets that play the part of GPUs.

Text form (``--devices``, config ``testbed.devices``): ``cpu:<sets>`` or ``cpu:<sets>x<cores>`` (``cpu:2``: two
devices of one core each, cores 0 and 1) and ``cuda:<i>,<j>,...`` (``cuda:0,1``: GPUs 0 and 1). Every device of a
testbed must be of one type (one name in the tables): the profiler measures one of them and the simulator
replays the trace on as many of that type.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from coloc import devices as device_table
from coloc.profiler import hardware


@dataclass(frozen=True)
class Device:
    """One device jobs are placed on: its index in the testbed (the simulator's GPU index), the tables' name,
    the torch device and the CPU cores its jobs are pinned to."""

    index: int
    name: str
    torch_device: str
    cpus: tuple[int, ...]

    @property
    def threads(self) -> int:
        """torch threads per job: one per core of a core set; on a GPU, the profiler's default for the cores."""
        return len(self.cpus)


def parse(text: str) -> list[Device]:
    """The devices named by `text` (see the module docstring); ValueError naming the text and what was expected."""
    kind, _, rest = str(text).strip().lower().partition(":")
    if kind == "cpu":
        return cpu_core_sets(*_cpu_shape(text, rest))
    if kind == "cuda" and rest:
        try:
            indices = [int(part) for part in rest.split(",")]
        except ValueError:
            indices = []
        if indices and len(set(indices)) == len(indices):
            return cuda_devices(indices)
    raise ValueError(f"testbed devices {text!r}: expected 'cpu:<sets>', 'cpu:<sets>x<cores>' or 'cuda:<i>,<j>,...'")


def _cpu_shape(text: str, rest: str) -> tuple[int, int]:
    sets, _, cores = rest.partition("x")
    if not sets.isdigit() or int(sets) < 1 or (cores and (not cores.isdigit() or int(cores) < 1)):
        raise ValueError(f"testbed devices {text!r}: expected 'cpu:<sets>' or 'cpu:<sets>x<cores>' with whole "
                         f"numbers >= 1")
    return int(sets), int(cores or 1)


def cpu_core_sets(sets: int, cores: int = 1) -> list[Device]:
    """`sets` devices of `cores` cores each, from the cores this process may use, in order."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    if sets * cores > len(allowed):
        raise ValueError(f"testbed devices: {sets} core sets of {cores} cores need {sets * cores} cores; this process "
                         f"may use {len(allowed)} ({allowed})")
    name = device_table.local_cpu_name(cores)
    return [Device(i, name, "cpu", tuple(allowed[i * cores:(i + 1) * cores])) for i in range(sets)]


def cuda_devices(indices) -> list[Device]:
    """The CUDA GPUs of `indices`, named by NVML (the profiler's names); every one must be the same model."""
    found = [hardware.resolve(f"cuda:{i}") for i in indices]
    names = sorted({d.name for d in found})
    if len(names) > 1:
        raise ValueError(f"testbed devices cuda:{','.join(map(str, indices))}: GPUs of {len(names)} models {names}; "
                         "expected one model (name the GPUs of one model)")
    return [Device(i, d.name, d.torch_device, d.cpus) for i, d in enumerate(found)]
