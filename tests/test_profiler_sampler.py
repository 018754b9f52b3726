"""The profiler's samplers: NVML missing or partly supported, psutil on this process, and their summary."""
import os

import pytest

from coloc.profiler import sampler
from coloc.profiler.errors import ProfilerError


def test_nvml_missing_raises_an_error_naming_what_was_tried():
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
        pytest.skip("NVML works on this machine")
    except pynvml.NVMLError:
        pass
    with pytest.raises(ProfilerError, match=r"nvmlInit\(\) failed.*libnvidia-ml"):
        sampler.open_nvml(0)


class FakeNvmlForErrorTest:
    """Stands in for pynvml in an error-handling test only: some metrics answer, others are unsupported."""

    NVML_CLOCK_SM = 1
    NVML_PCIE_UTIL_TX_BYTES, NVML_PCIE_UTIL_RX_BYTES = 0, 1

    class NVMLError_NotSupported(Exception):
        pass

    class Rates:
        gpu, memory = 87, 41

    class Memory:
        used = 5 * 2**30

    class Proc:
        def __init__(self, pid, used):
            self.pid, self.usedGpuMemory = pid, used

    def nvmlDeviceGetUtilizationRates(self, handle):
        return self.Rates()

    def nvmlDeviceGetMemoryInfo(self, handle):
        return self.Memory()

    def nvmlDeviceGetClockInfo(self, handle, clock):
        return 1755

    def nvmlDeviceGetPcieThroughput(self, handle, counter):
        return {0: 100, 1: 300}[counter]

    def nvmlDeviceGetPowerUsage(self, handle):
        raise self.NVMLError_NotSupported("Not Supported")

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        return [self.Proc(11, 2**30), self.Proc(99, 7)]

    def nvmlDeviceGetProcessUtilization(self, handle, since):
        raise self.NVMLError_NotSupported("Not Supported")


def test_nvml_probe_keeps_what_the_gpu_answers_and_names_what_it_does_not():
    probe = sampler.NvmlProbe(FakeNvmlForErrorTest(), handle=object())
    sample = probe.sample([11, 12])
    assert sample["gpu_util"] == 87 and sample["mem_util"] == 41 and sample["mem_used_bytes"] == 5 * 2**30
    assert sample["sm_clock_mhz"] == 1755
    assert sample["pcie_tx_bytes_s"] == 100 * 1024 and sample["pcie_rx_bytes_s"] == 300 * 1024
    assert sample["per_pid"] == {11: {"gpu_mem_bytes": float(2**30)}, 12: {}}
    assert "power_w" not in sample
    assert set(probe.errors) == {"power", "process_utilization"}
    assert "NotSupported" in probe.errors["power"]


def test_psutil_probe_reads_this_process_and_summarize_separates_other_load():
    probe = sampler.PsutilProbe(tuple(sorted(os.sched_getaffinity(0))))
    sample = probe.sample([os.getpid()])
    assert sample["per_pid"][os.getpid()]["rss_bytes"] > 10 * 2**20 and sample["cpu_busy_s"] > 0
    samples = [  # 2 cores for 2 s: 3 busy core-seconds, of which our pid 1.0 -> 75% busy, 50% other
        {"t": 10.0, "cpu_busy_s": 100.0, "per_pid": {7: {"cpu_s": 5.0, "rss_bytes": 10.0}}},
        {"t": 11.0, "cpu_busy_s": 101.0, "per_pid": {7: {"cpu_s": 5.5, "rss_bytes": 30.0}}, "gpu_util": 50.0},
        {"t": 12.0, "cpu_busy_s": 103.0, "per_pid": {7: {"cpu_s": 6.0, "rss_bytes": 20.0}}, "gpu_util": 70.0},
        {"t": 13.0, "cpu_busy_s": 200.0, "per_pid": {7: {"cpu_s": 9.0, "rss_bytes": 99.0}}},
    ]
    device, per_pid = sampler.summarize(samples, 10.0, 12.0, [7], n_cpus=2)
    assert device["cpu_busy_pct"] == pytest.approx(75.0) and device["other_cpu_pct"] == pytest.approx(50.0)
    assert device["gpu_util"] == pytest.approx(60.0)
    assert per_pid[7] == {"rss_bytes": 30.0}
