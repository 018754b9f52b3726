"""The device a sweep measures on: which torch device, what it is called, CUDA MPS.

Names (the ``device`` column of the tables): NVIDIA GPUs are NVML's name lowercased
(``nvidia h200``); CPUs are ``cpu:<model> x<cores>`` (:func:`coloc.devices.local_cpu_name`)
where cores is the number of logical CPUs the co-located jobs share.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

from coloc import devices

from .errors import ProfilerError

_said_cpu = False


@dataclass(frozen=True)
class Device:
    """A resolved measurement device."""

    torch_device: str        # "cpu" or "cuda:N"
    name: str                # the tables' device name
    kind: str                # "cpu" or "gpu"
    cpus: tuple[int, ...]    # logical CPUs the jobs' processes are pinned to
    note: str = ""           # how the name was found (e.g. NVML failed, torch's name used)


def resolve(requested: str = "auto", cpus=None) -> Device:
    """The device for ``requested`` ("auto", "cpu", "cuda" or "cuda:N") on this machine.

    "auto" takes the first CUDA GPU when torch sees one, else the CPU (and says so once).
    """
    core_set = _core_set(cpus)
    requested = str(requested).strip().lower()
    if requested == "auto":
        import torch

        if torch.cuda.is_available():
            return _gpu(0, core_set)
        _say_cpu_once(f"no CUDA GPU visible to torch {torch.__version__} (torch.cuda.is_available() is False)")
        return _cpu(core_set)
    if requested == "cpu":
        return _cpu(core_set)
    if requested == "cuda" or requested.startswith("cuda:"):
        index = 0 if requested == "cuda" else _cuda_index(requested)
        _require_cuda(requested, index)
        return _gpu(index, core_set)
    raise ProfilerError(f"device {requested!r}: expected 'auto', 'cpu', 'cuda' or 'cuda:<index>'")


def _core_set(cpus) -> tuple[int, ...]:
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    if cpus is None:
        return tuple(allowed)
    chosen = tuple(sorted({int(c) for c in cpus}))
    outside = [c for c in chosen if c not in allowed]
    if not chosen or outside:
        raise ProfilerError(f"cpus {list(cpus)}: expected a non-empty subset of the CPUs this process may use "
                            f"{allowed}")
    return chosen


def _cpu(core_set: tuple[int, ...]) -> Device:
    return Device("cpu", devices.local_cpu_name(len(core_set)), "cpu", core_set)


def _say_cpu_once(reason: str) -> None:
    global _said_cpu
    if not _said_cpu:
        _said_cpu = True
        warnings.warn(f"coloc.profiler: {reason}; profiling on the CPU instead", RuntimeWarning, stacklevel=3)


def _cuda_index(requested: str) -> int:
    tail = requested.split(":", 1)[1]
    if not tail.isdigit():
        raise ProfilerError(f"device {requested!r}: expected 'cuda:<index>' with an integer index")
    return int(tail)


def _require_cuda(requested: str, index: int) -> None:
    import torch

    if not torch.cuda.is_available():
        raise ProfilerError(
            f"device {requested!r} requested, but torch {torch.__version__} sees no CUDA GPU "
            f"(torch.version.cuda = {torch.version.cuda}, torch.cuda.is_available() is False, "
            f"CUDA_VISIBLE_DEVICES = {os.environ.get('CUDA_VISIBLE_DEVICES')!r}); use device 'cpu' or 'auto'"
        )
    if index >= torch.cuda.device_count():
        raise ProfilerError(f"device {requested!r}: torch sees {torch.cuda.device_count()} CUDA GPU(s)")


def _gpu(index: int, core_set: tuple[int, ...]) -> Device:
    """Name the GPU from NVML (matched by UUID), falling back to torch's name with a note."""
    import torch

    from .sampler import open_nvml

    props = torch.cuda.get_device_properties(index)
    uuid = str(getattr(props, "uuid", "") or "")
    try:
        nvml, handle = open_nvml(index, uuid)
        name = _text(nvml.nvmlDeviceGetName(handle)).lower()
        note = ""
    except ProfilerError as exc:
        name = props.name.lower()
        note = f"named by torch.cuda.get_device_properties, NVML failed: {exc}"
        warnings.warn(f"coloc.profiler: {note}", RuntimeWarning, stacklevel=3)
    return Device(f"cuda:{index}", " ".join(name.split()), "gpu", core_set, note)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@contextmanager
def mps_daemon(enabled: bool, device: Device):
    """Run the CUDA MPS control daemon while the block runs; yields the environment workers need.

    Disabled: yields (). Enabled on a CPU or without ``nvidia-cuda-mps-control``: ProfilerError.
    """
    if not enabled:
        yield ()
        return
    if device.kind != "gpu":
        raise ProfilerError(f"CUDA MPS was requested (mps: true) but the device is {device.name!r}: "
                            "MPS needs an NVIDIA GPU")
    control = shutil.which("nvidia-cuda-mps-control")
    if control is None:
        raise ProfilerError(
            "CUDA MPS was requested (mps: true) but nvidia-cuda-mps-control was not found on PATH "
            f"({os.environ.get('PATH', '')}); install the NVIDIA driver utilities or set mps: false"
        )
    with tempfile.TemporaryDirectory(prefix="coloc-mps-") as folder:
        env = (("CUDA_MPS_PIPE_DIRECTORY", os.path.join(folder, "pipe")),
               ("CUDA_MPS_LOG_DIRECTORY", os.path.join(folder, "log")))
        full = {**os.environ, **dict(env)}
        for _, path in env:
            os.makedirs(path)
        started = subprocess.run([control, "-d"], env=full, capture_output=True, text=True, timeout=30)
        if started.returncode != 0:
            raise ProfilerError(f"{control} -d failed (exit {started.returncode}): {started.stderr.strip()}")
        try:
            yield env
        finally:
            subprocess.run([control], input="quit\n", env=full, capture_output=True, text=True, timeout=30)
