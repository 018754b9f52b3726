"""Fixed CPU code paths for training, so that a trained network's predictions are the same bits on any x86-64 CPU.

MKL's matrix products and PyTorch's vectorised kernels pick a code path for the CPU at run
time (AVX-512, AVX2, SSE). The paths add in different orders, so results differ in the last
bits between machines; early stopping then turns those bits into different models (the
E-GGAT's random5 MAPE moved by about a point between two machines). :func:`pin` fixes both:

* ``MKL_CBWR=COMPATIBLE``: MKL's conditional numerical reproducibility in its SSE2 branch
  without the ``rcpps``/``rsqrtps`` instructions (whose results differ between Intel and AMD
  CPUs), the one branch MKL keeps on every x86-64 CPU. A faster branch such as ``AVX2`` is
  Intel-only: on an AMD CPU MKL ignores it and runs unpinned (its verbose log says ``CNR:AUTO``).
* ``ATEN_CPU_CAPABILITY=default``: PyTorch's kernels compiled for baseline x86-64, not the
  AVX2 or AVX-512 copies.

Both are read when torch first runs a kernel, so :func:`pin` works before that (before or after
``import torch``), and raises when torch has already chosen other paths. The cost is MKL's SSE2
matrix products (docs/predictors.md gives the E-GGAT's CPU seconds with and without). The
environment variable ``COLOC_CPU_PATHS=native`` keeps the machine's fastest paths; results then
depend on the CPU.
"""

from __future__ import annotations

import ctypes
import os
import warnings

FIXED = {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "default"}
OPT_OUT = "COLOC_CPU_PATHS"  # "native": keep the machine's own paths
# MKL's CNR branch codes (mkl_cbwr_get), by name.
MKL_BRANCHES = {1: "OFF", 2: "AUTO", 3: "COMPATIBLE", 4: "SSE2", 8: "SSE4_2", 9: "AVX", 10: "AVX2", 12: "AVX512",
                14: "AVX512_E1"}
NO_MKL = "no MKL"


def mkl_branch() -> str:
    """The CNR branch MKL runs with (MKL_BRANCHES), or NO_MKL when this torch has no MKL to ask."""
    import torch

    try:
        lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
        get = lib.mkl_serv_cbwr_get
    except (OSError, AttributeError):
        return NO_MKL
    code = int(get(1))  # 1: MKL_CBWR_BRANCH
    return MKL_BRANCHES.get(code & 0xFFFF, str(code))


def in_effect() -> dict:
    """The paths torch runs with now: {"aten": its kernels' capability, "mkl": MKL's branch}; asking fixes them."""
    import torch

    return {"aten": torch.backends.cpu.get_cpu_capability(), "mkl": mkl_branch()}


def is_fixed(paths: dict) -> bool:
    """Whether ``paths`` (in_effect) are the fixed ones."""
    return paths["aten"] == "DEFAULT" and paths["mkl"] in ("COMPATIBLE", NO_MKL)


def pin() -> dict:
    """Fix the paths (FIXED) for this process and those it starts; the paths in effect.

    RuntimeError when torch already runs other paths in this process (a kernel ran before the
    call). With ``COLOC_CPU_PATHS=native`` nothing is changed.
    """
    if os.environ.get(OPT_OUT) == "native":
        return in_effect()
    os.environ.update(FIXED)
    paths = in_effect()
    if not is_fixed(paths):
        raise RuntimeError(f"coloc.cpu_paths.pin: torch already runs the CPU paths {paths} in this process; "
                           f"pin before torch runs a kernel (the first lines of an entry point), or set "
                           f"{' '.join(f'{k}={v}' for k, v in FIXED.items())} before starting Python")
    return paths


def warn_unless_fixed(what: str) -> None:
    """A RuntimeWarning naming ``what`` when the paths in effect are not the fixed ones (results then depend on
    the CPU); silent with ``COLOC_CPU_PATHS=native``, which asks for that."""
    if os.environ.get(OPT_OUT) == "native":
        return
    paths = in_effect()
    if not is_fixed(paths):
        warnings.warn(f"{what}: CPU paths {paths} are this machine's own, so the trained networks may differ on "
                      f"another CPU; call coloc.cpu_paths.pin() before torch runs (the predictor notebooks do)",
                      RuntimeWarning, stacklevel=3)
