"""Samples the device while measured jobs run: NVML on NVIDIA GPUs, psutil on the CPU.

A :class:`Sampler` thread asks each probe for a sample every ``interval_s``; a sample is
``{"t": monotonic seconds, <device metric>: value, "per_pid": {pid: {<metric>: value}}}``.
:func:`summarize` turns the samples inside a time window into means and peaks.

NVML metrics: ``gpu_util`` and ``mem_util`` (% of time the GPU computed / read or wrote
memory), ``mem_used_bytes`` (whole GPU), ``sm_clock_mhz``, ``pcie_rx_bytes_s`` and
``pcie_tx_bytes_s``, ``power_w``; per process ``gpu_mem_bytes`` and ``sm_util``.
psutil metrics: ``cpu_busy_s`` (busy seconds of the device's cores since boot); per process
``cpu_s`` (user + system seconds) and ``rss_bytes``.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import psutil

from .errors import ProfilerError


def open_nvml(index: int, uuid: str = "", nvml=None):
    """NVML's module and the handle of CUDA device ``index`` (matched by UUID when given).

    Raises ProfilerError saying what was tried when NVML is missing or fails.
    """
    tried = []
    if nvml is None:
        try:
            import pynvml as nvml
        except ImportError as exc:
            raise ProfilerError(f"NVML unavailable: import pynvml (package nvidia-ml-py) failed: {exc}") from exc
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError subclasses, OSError from ctypes
        raise ProfilerError(
            f"NVML unavailable: pynvml.nvmlInit() failed ({type(exc).__name__}: {exc}); it loads libnvidia-ml.so.1 "
            "from the NVIDIA driver, which this machine lacks or cannot load"
        ) from exc
    for candidate in ([f"GPU-{uuid}", uuid] if uuid else []):
        try:
            return nvml, nvml.nvmlDeviceGetHandleByUUID(candidate)
        except Exception as exc:  # noqa: BLE001
            tried.append(f"nvmlDeviceGetHandleByUUID({candidate!r}): {exc}")
    try:
        return nvml, nvml.nvmlDeviceGetHandleByIndex(index)
    except Exception as exc:  # noqa: BLE001
        tried.append(f"nvmlDeviceGetHandleByIndex({index}): {exc}")
    raise ProfilerError("NVML found no handle for the GPU; tried " + "; ".join(tried))


class PsutilProbe:
    """CPU use and resident memory of the workers, and how busy the device's cores are."""

    def __init__(self, cpus: tuple[int, ...]):
        self.cpus = tuple(cpus)
        self._procs: dict[int, psutil.Process] = {}

    def sample(self, pids) -> dict:
        per_pid = {}
        for pid in pids:
            try:
                proc = self._procs.setdefault(pid, psutil.Process(pid))
                with proc.oneshot():
                    times = proc.cpu_times()
                    per_pid[pid] = {"cpu_s": times.user + times.system, "rss_bytes": proc.memory_info().rss}
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        per_cpu = psutil.cpu_times(percpu=True)
        busy = sum(_busy(per_cpu[c]) for c in self.cpus if c < len(per_cpu))
        return {"cpu_busy_s": busy, "per_pid": per_pid}


def _busy(times) -> float:
    idle = times.idle + getattr(times, "iowait", 0.0)
    return sum(times) - idle


class NvmlProbe:
    """NVML metrics of one GPU. A metric the GPU does not support is dropped, and its error kept."""

    def __init__(self, nvml, handle):
        self.nvml = nvml
        self.handle = handle
        self.errors: dict[str, str] = {}
        self._last_process_sample = 0

    def sample(self, pids) -> dict:
        out: dict = {"per_pid": {pid: {} for pid in pids}}
        self._try("utilization", self._utilization, out)
        self._try("memory", self._memory, out)
        self._try("sm_clock", self._clock, out)
        self._try("pcie", self._pcie, out)
        self._try("power", self._power, out)
        self._try("process_memory", self._process_memory, out)
        self._try("process_utilization", self._process_utilization, out)
        return out

    def _try(self, what: str, read, out: dict) -> None:
        if what in self.errors:
            return
        try:
            read(out)
        except Exception as exc:  # noqa: BLE001 - NVMLError_NotSupported and friends
            if "NotFound" in type(exc).__name__ and what == "process_utilization":
                return  # no new per-process samples since the last call
            self.errors[what] = f"{type(exc).__name__}: {exc}"

    def _utilization(self, out):
        rates = self.nvml.nvmlDeviceGetUtilizationRates(self.handle)
        out["gpu_util"], out["mem_util"] = float(rates.gpu), float(rates.memory)

    def _memory(self, out):
        out["mem_used_bytes"] = float(self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used)

    def _clock(self, out):
        out["sm_clock_mhz"] = float(self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))

    def _pcie(self, out):
        get = self.nvml.nvmlDeviceGetPcieThroughput
        out["pcie_rx_bytes_s"] = 1024.0 * get(self.handle, self.nvml.NVML_PCIE_UTIL_RX_BYTES)
        out["pcie_tx_bytes_s"] = 1024.0 * get(self.handle, self.nvml.NVML_PCIE_UTIL_TX_BYTES)

    def _power(self, out):
        out["power_w"] = self.nvml.nvmlDeviceGetPowerUsage(self.handle) / 1000.0

    def _process_memory(self, out):
        for proc in self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle):
            used = getattr(proc, "usedGpuMemory", None)
            if proc.pid in out["per_pid"] and used is not None:
                out["per_pid"][proc.pid]["gpu_mem_bytes"] = float(used)

    def _process_utilization(self, out):
        samples = self.nvml.nvmlDeviceGetProcessUtilization(self.handle, self._last_process_sample)
        for s in samples:
            self._last_process_sample = max(self._last_process_sample, int(s.timeStamp))
            if s.pid in out["per_pid"]:
                out["per_pid"][s.pid]["sm_util"] = float(s.smUtil)


class Sampler:
    """A background thread that samples the probes every ``interval_s`` while jobs run."""

    def __init__(self, probes, interval_s: float = 0.2):
        if interval_s <= 0:
            raise ProfilerError(f"sample interval {interval_s}: expected a positive number of seconds")
        self.probes = list(probes)
        self.interval_s = interval_s
        self._samples: list[dict] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, pids) -> None:
        self._samples, pids = [], list(pids)
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(pids,), name="coloc-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> list[dict]:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        return self._samples

    def _run(self, pids) -> None:
        while True:
            self._samples.append(self.take(pids))
            if self._stop.wait(self.interval_s):
                self._samples.append(self.take(pids))
                return

    def take(self, pids) -> dict:
        sample: dict = {"t": time.monotonic(), "per_pid": {pid: {} for pid in pids}}
        for probe in self.probes:
            part = probe.sample(pids)
            for pid, values in part.pop("per_pid", {}).items():
                sample["per_pid"].setdefault(pid, {}).update(values)
            sample.update(part)
        return sample


DEVICE_MEANS = ("gpu_util", "mem_util", "mem_used_bytes", "sm_clock_mhz", "pcie_rx_bytes_s", "pcie_tx_bytes_s",
                "power_w")


def summarize(samples: list[dict], start: float, end: float, pids, n_cpus: int) -> tuple[dict, dict]:
    """Device means and per-process figures over the samples in [start, end].

    Returns (device, per_pid). device: means of the NVML metrics, ``cpu_busy_pct`` (the
    device's cores busy, % of their time) and ``other_cpu_pct`` (busy with anything but the
    workers: other users' load). per_pid: peak ``rss_bytes`` and ``gpu_mem_bytes``, mean ``sm_util``.
    """
    inside = [s for s in samples if start <= s["t"] <= end]
    if len(inside) < 2:  # a window shorter than the interval: use the nearest samples around it
        inside = _around(samples, start, end)
    device = {}
    for key in DEVICE_MEANS:
        values = [s[key] for s in inside if key in s]
        if values:
            device[key] = float(np.mean(values))
    device.update(_cpu_busy(inside, pids, n_cpus))
    per_pid = {pid: _process_figures(inside, pid) for pid in pids}
    return device, per_pid


def _around(samples: list[dict], start: float, end: float) -> list[dict]:
    before = [s for s in samples if s["t"] < start][-1:]
    after = [s for s in samples if s["t"] > end][:1]
    return before + [s for s in samples if start <= s["t"] <= end] + after


def _cpu_busy(inside: list[dict], pids, n_cpus: int) -> dict:
    with_busy = [s for s in inside if "cpu_busy_s" in s]
    if len(with_busy) < 2:
        return {}
    first, last = with_busy[0], with_busy[-1]
    span = (last["t"] - first["t"]) * n_cpus
    if span <= 0:
        return {}
    busy = last["cpu_busy_s"] - first["cpu_busy_s"]
    ours = 0.0
    for pid in pids:
        a, b = first["per_pid"].get(pid, {}), last["per_pid"].get(pid, {})
        if "cpu_s" in a and "cpu_s" in b:
            ours += b["cpu_s"] - a["cpu_s"]
    return {"cpu_busy_pct": 100.0 * busy / span, "other_cpu_pct": max(0.0, 100.0 * (busy - ours) / span)}


def _process_figures(inside: list[dict], pid: int) -> dict:
    rows = [s["per_pid"].get(pid, {}) for s in inside]
    out = {}
    for key in ("rss_bytes", "gpu_mem_bytes"):
        values = [r[key] for r in rows if key in r]
        if values:
            out[key] = float(max(values))
    sm = [r["sm_util"] for r in rows if "sm_util" in r]
    if sm:
        out["sm_util"] = float(np.mean(sm))
    return out
