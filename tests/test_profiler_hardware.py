"""The profiler's device: the CPU when no GPU is asked for or found, said once; bad requests say what was tried."""
import os
import warnings

import pytest

from coloc import profiler
from coloc.profiler import hardware
from coloc.profiler.errors import ProfilerError


def test_auto_device_on_a_machine_without_gpu_is_the_cpu_and_says_so_once(monkeypatch):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    monkeypatch.setattr(hardware, "_said_cpu", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = profiler.resolve("auto")
        second = profiler.resolve("auto", cpus=[0])
    said = [w for w in caught if "profiling on the CPU" in str(w.message)]
    assert len(said) == 1
    assert first.kind == "cpu" and first.torch_device == "cpu"
    assert first.name.startswith("cpu:") and first.name.endswith(f" x{len(os.sched_getaffinity(0))}")
    assert second.cpus == (0,) and second.name.endswith(" x1")


def test_cuda_request_without_gpu_and_bad_device_requests_say_what_was_tried():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    with pytest.raises(ProfilerError, match=r"torch.cuda.is_available\(\) is False"):
        profiler.resolve("cuda")
    with pytest.raises(ProfilerError, match="expected 'auto', 'cpu'"):
        profiler.resolve("tpu")
    with pytest.raises(ProfilerError, match="non-empty subset"):
        profiler.resolve("cpu", cpus=[10_000])
    with pytest.raises(ProfilerError, match="MPS needs an NVIDIA GPU"):
        with hardware.mps_daemon(True, profiler.resolve("cpu")):
            pass
