"""Fixed CPU code paths for training (coloc.cpu_paths): set in each process that trains, before torch runs.

Each check runs in a fresh Python process: the paths are fixed once per process, when torch first runs.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coloc import cpu_paths

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
# What a notebook calls when it trains a network: it must pin the CPU paths first.
TRAINS = ("run_protocol(", "run_resources(", "evaluate(", ".fit(")


def python(code: str, **env) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter with this checkout's lib/ and ``env`` on top of a clean environment."""
    base = {k: v for k, v in os.environ.items() if k not in (*cpu_paths.FIXED, cpu_paths.OPT_OUT)}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "lib"), os.environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-c", code], env=base | env, capture_output=True, text=True, timeout=120)


def test_pin_fixes_the_paths_whatever_the_environment_asked_for():
    code = "from coloc import cpu_paths; import json; print(json.dumps(cpu_paths.pin()))"
    done = python(code, ATEN_CPU_CAPABILITY="avx2", MKL_CBWR="AUTO")
    assert done.returncode == 0, done.stderr
    paths = json.loads(done.stdout.splitlines()[-1])
    assert paths["aten"] == "DEFAULT" and paths["mkl"] in ("COMPATIBLE", cpu_paths.NO_MKL)


def test_pin_works_after_import_torch_and_reaches_the_processes_it_starts():
    code = ("import torch, subprocess, sys\nfrom coloc import cpu_paths\ncpu_paths.pin()\n"
            "print(subprocess.run([sys.executable, '-c', 'import torch; "
            "print(torch.backends.cpu.get_cpu_capability())'], capture_output=True, text=True).stdout.strip())")
    done = python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "DEFAULT"


def test_pin_refuses_when_torch_already_runs_other_paths():
    code = "import torch\ntorch.ones(4) @ torch.ones(4)\nfrom coloc import cpu_paths\ncpu_paths.pin()"
    done = python(code, ATEN_CPU_CAPABILITY="avx2")
    assert done.returncode != 0
    assert "torch already runs the CPU paths {'aten': 'AVX2'" in done.stderr
    assert "pin before torch runs a kernel" in done.stderr


def test_native_keeps_the_machine_paths():
    code = "import os; from coloc import cpu_paths; cpu_paths.pin(); print(os.environ.get('MKL_CBWR'))"
    done = python(code, COLOC_CPU_PATHS="native")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "None"


def test_a_fit_without_fixed_paths_warns_that_it_depends_on_the_cpu():
    code = ("import warnings\nwarnings.simplefilter('error')\nfrom coloc.predict.evaluate import _fold_task\n"
            "try:\n    _fold_task(None, None, 0, {})\nexcept RuntimeWarning as w:\n    print('WARNED', w)\n")
    done = python(code, ATEN_CPU_CAPABILITY="avx2")
    assert "WARNED" in done.stdout and "may differ on another CPU" in done.stdout, done.stdout + done.stderr
    pinned = python(code.replace("from coloc.predict", "from coloc import cpu_paths\ncpu_paths.pin()\n"
                                                       "from coloc.predict"))
    assert "WARNED" not in pinned.stdout


def notebook_code(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_every_notebook_that_trains_pins_the_cpu_paths_first(path):
    cells = notebook_code(path)
    trains = [i for i, code in enumerate(cells) if any(call in code for call in TRAINS)]
    if not trains:
        return
    pins = [i for i, code in enumerate(cells) if "cpu_paths.pin()" in code]
    assert pins and pins[0] <= trains[0], f"{path.name}: trains in code cell {trains[0]} without cpu_paths.pin() first"
    first = cells[pins[0]]
    assert first.index("cpu_paths.pin()") < min((first.find(c) for c in TRAINS if c in first), default=len(first))


def test_the_predictor_notebooks_are_among_those_that_pin():
    pinned = {p.stem for p in NOTEBOOKS.glob("*.ipynb") if any("cpu_paths.pin()" in c for c in notebook_code(p))}
    assert {"03_predictors", "03_resources", "03_ablation"} <= pinned
