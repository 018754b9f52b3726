"""The device table: vendor specifications of GPUs, and a row for the local CPU.

Columns (one row per device, ``name`` unique):

* ``name``: coloc's device id (``k80``, ``p100``, ``v100`` as in Gavel's data, newer GPUs
  by short name, CPUs as ``cpu:<model> x<threads>``).
* ``kind``: ``gpu`` or ``cpu``.
* ``peak_flops``: peak FP32 FLOP/s (boost clock, one GPU; a K80 row is one of the board's
  two GK210 GPUs, which is what a job sees).
* ``peak_tensor_flops``: dense FP16 tensor-core FLOP/s with FP32 accumulate (0 without
  tensor cores).
* ``memory_bytes``, ``mem_bandwidth`` (bytes/s), ``sms`` (streaming multiprocessors; CPU:
  physical cores), ``cuda_cores`` (CPU: logical threads), ``mem_clock_mhz`` (maximum memory
  clock as nvidia-smi reports it), ``tensor_cores``.

Sources: NVIDIA's product datasheets and architecture whitepapers (Kepler GK210, Pascal
GP100, Volta GV100, Turing TU104, Ampere GA100/GA102 (A10, GeForce RTX 3090), Ada AD104/AD102, Hopper GH100).
CPU rows are estimates from psutil and /proc/cpuinfo (see :func:`cpu_row`).
"""

from __future__ import annotations

import difflib
import os
import platform
import re

import pandas as pd

COLUMNS = (
    "name", "kind", "peak_flops", "peak_tensor_flops", "memory_bytes", "mem_bandwidth",
    "sms", "cuda_cores", "mem_clock_mhz", "tensor_cores",
)
# The five GPU features of ISACPP's node vector.
ISACPP_FEATURES = ("mem_bandwidth", "cuda_cores", "sms", "mem_clock_mhz", "tensor_cores")
NUMERIC = COLUMNS[2:]

T, G, GB = 1e12, 1e9, 1e9
GIB = 2**30

# name: (peak FP32, peak tensor FP16 dense, memory, bandwidth, SMs, CUDA cores, mem clock MHz, tensor cores)
_GPU_SPECS = {
    "k80": (4.37 * T, 0.0, 12 * GIB, 240 * GB, 13, 2496, 2505, 0),
    "p100": (9.3 * T, 0.0, 16 * GIB, 732 * GB, 56, 3584, 715, 0),          # PCIe 16 GB
    "v100": (15.7 * T, 125 * T, 16 * GIB, 900 * GB, 80, 5120, 877, 640),   # SXM2 16 GB
    "t4": (8.1 * T, 65 * T, 16 * GIB, 320 * GB, 40, 2560, 5001, 320),
    "a10": (31.2 * T, 125 * T, 24 * GIB, 600 * GB, 72, 9216, 6251, 288),
    # GeForce RTX 3090 (Lucid's measurements): NVIDIA Ampere GA102 whitepaper, Table 9 (and the product page):
    # 82 SMs, 10,496 CUDA cores, 328 tensor cores, 1695 MHz boost -> 35.6 TFLOP/s FP32, 71 TFLOP/s dense FP16
    # tensor with FP32 accumulate (GeForce rate: half of FP16 accumulate's 142), 24 GB GDDR6X at 19.5 Gbps on a
    # 384-bit bus (936 GB/s), maximum memory clock 9751 MHz as nvidia-smi reports it
    "rtx3090": (35.6 * T, 71 * T, 24 * GIB, 936 * GB, 82, 10496, 9751, 328),
    "l4": (30.3 * T, 121 * T, 24 * GIB, 300 * GB, 58, 7424, 6251, 232),
    "l40s": (91.6 * T, 362 * T, 48 * GIB, 864 * GB, 142, 18176, 9001, 568),
    "a100-40gb": (19.5 * T, 312 * T, 40 * GIB, 1555 * GB, 108, 6912, 1215, 432),  # SXM4
    "a100-80gb": (19.5 * T, 312 * T, 80 * GIB, 2039 * GB, 108, 6912, 1593, 432),  # SXM4
    "h100-pcie": (51.2 * T, 756 * T, 80 * GIB, 2000 * GB, 114, 14592, 1593, 456),
    "h100-sxm": (66.9 * T, 989 * T, 80 * GIB, 3350 * GB, 132, 16896, 2619, 528),
    "h200": (66.9 * T, 989 * T, 141 * GB, 4800 * GB, 132, 16896, 3201, 528),     # SXM
}

# NVML names (lowercased) -> table row. Matching also tries these as substrings.
_ALIASES = {
    "tesla k80": "k80",
    "tesla p100-pcie-16gb": "p100",
    "tesla p100-pcie-12gb": "p100",
    "tesla p100-sxm2-16gb": "p100",
    "tesla v100-sxm2-16gb": "v100",
    "tesla v100-sxm2-32gb": "v100",
    "tesla v100-pcie-16gb": "v100",
    "tesla v100-pcie-32gb": "v100",
    "tesla t4": "t4",
    "nvidia a10": "a10",
    "nvidia geforce rtx 3090": "rtx3090",
    "nvidia l4": "l4",
    "nvidia l40s": "l40s",
    "nvidia a100-sxm4-40gb": "a100-40gb",
    "nvidia a100-pcie-40gb": "a100-40gb",
    "nvidia a100-sxm4-80gb": "a100-80gb",
    "nvidia a100 80gb pcie": "a100-80gb",
    "nvidia h100 pcie": "h100-pcie",
    "nvidia h100 80gb hbm3": "h100-sxm",
    "nvidia h100": "h100-sxm",
    "nvidia h200": "h200",
    "nvidia h200 nvl": "h200",
}
_CPU_NAME = re.compile(r"cpu:(?P<model>.+) x(?P<threads>\d+)")


def gpu_table() -> pd.DataFrame:
    """Every GPU with known specifications, one row each."""
    rows = [_gpu_row(name) for name in _GPU_SPECS]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _gpu_row(name: str, as_name: str | None = None) -> dict:
    return {"name": as_name or name, "kind": "gpu", **dict(zip(NUMERIC, map(float, _GPU_SPECS[name]), strict=True))}


def canonical_gpu(name: str) -> str | None:
    """The table row for a GPU name (ours, or NVML's in any case), or None when unknown."""
    key = " ".join(name.lower().split())
    if key in _GPU_SPECS:
        return key
    if key in _ALIASES:
        return _ALIASES[key]
    # e.g. "nvidia h200 141gb hbm3e" or "tesla v100-sxm2-16gb-ls": the longest alias it starts with
    starts = [alias for alias in _ALIASES if key.startswith(alias)]
    return _ALIASES[max(starts, key=len)] if starts else None


def close_names(name: str, n: int = 4) -> list[str]:
    """Known GPU names close to an unknown ``name``: those it starts (``a100`` -> ``a100-40gb``, ``a100-80gb``),
    else the most similar spellings (difflib), at most ``n``."""
    key = " ".join(name.lower().split())
    starts = [g for g in _GPU_SPECS if g.startswith(key)] if key else []
    similar = difflib.get_close_matches(key, list(_GPU_SPECS), n=n, cutoff=0.6)
    return (starts or similar)[:n]


def unknown_text(name: str) -> str:
    """``'a100' is not a device coloc knows (close names: a100-40gb, a100-80gb)``."""
    close = close_names(name)
    return f"{name!r} is not a device coloc knows ({'close names: ' + ', '.join(close) if close else 'no close name'})"


def device_row(name: str) -> dict:
    """The row of one device; the name is kept as given (so the profiler's names match).

    GPU names are ours (``v100``) or NVML's (``nvidia h200``); CPU names are
    ``cpu:<model> x<threads>``. Raises KeyError naming the known devices otherwise.
    """
    match = _CPU_NAME.fullmatch(name)
    if match:
        return cpu_row(name, match["model"], int(match["threads"]))
    gpu = canonical_gpu(name)
    if gpu is None:
        raise KeyError(
            f"device {unknown_text(name)}; expected one of {sorted(_GPU_SPECS)}, an NVML name "
            f"such as {sorted(_ALIASES)[:3]}, or 'cpu:<model> x<threads>'"
        )
    return _gpu_row(gpu, as_name=name)


def device_table(names) -> pd.DataFrame:
    """Rows for the given device names (duplicates dropped, order kept)."""
    unique = list(dict.fromkeys(names))
    return pd.DataFrame([device_row(n) for n in unique], columns=list(COLUMNS))


# ---------------------------------------------------------------------------- CPU


def local_cpu_model() -> str:
    """The CPU model string from /proc/cpuinfo (platform's processor or machine as a fallback)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def local_cpu_name(threads: int | None = None) -> str:
    """The profiler's name of this machine's CPU device: ``cpu:<model> x<threads>``."""
    if threads is None:
        threads = os.cpu_count() or 1
    return f"cpu:{local_cpu_model()} x{int(threads)}"


def _simd_flops_per_cycle() -> int:
    """FP32 FLOPs per cycle per core: 2 FMA units x SIMD lanes x 2 (from the CPU's flags)."""
    try:
        with open("/proc/cpuinfo") as fh:
            flags = next((line.split(":", 1)[1].split() for line in fh if line.startswith("flags")), [])
    except OSError:
        flags = []
    if "avx512f" in flags:
        return 64
    if "avx2" in flags and "fma" in flags:
        return 32
    return 8


def cpu_row(name: str, model: str, threads: int) -> dict:
    """A CPU device row. Specs of the local CPU are estimated; another CPU model gets NaN specs.

    Estimates (local CPU only): peak FLOP/s = min(threads, physical cores) x clock x FP32
    FLOPs/cycle from the SIMD flags; memory = total RAM; ``sms`` = physical cores used,
    ``cuda_cores`` = threads. Memory bandwidth and clock are not measurable here: NaN.
    """
    import psutil

    nan = float("nan")
    row = {"name": name, "kind": "cpu", "peak_flops": nan, "peak_tensor_flops": 0.0, "memory_bytes": nan,
           "mem_bandwidth": nan, "sms": nan, "cuda_cores": float(threads), "mem_clock_mhz": nan,
           "tensor_cores": 0.0}
    if model != local_cpu_model():
        return row
    physical = psutil.cpu_count(logical=False) or psutil.cpu_count() or 1
    cores = min(threads, physical)
    freq = psutil.cpu_freq()
    mhz = (freq.max or freq.current) if freq else 0.0
    row.update(sms=float(cores), memory_bytes=float(psutil.virtual_memory().total))
    if mhz:
        row["peak_flops"] = cores * mhz * 1e6 * _simd_flops_per_cycle()
    return row
