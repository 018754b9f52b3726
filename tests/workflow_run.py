"""Running the workflow from tests: Snakemake in a subprocess, with or without the data mirror."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CI_CONFIG = REPO / "config" / "ci.yaml"


def run(args, cwd, mirror=None, timeout=900):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("COLOC_DATA_MIRROR", None)
    if mirror is not None:
        env["COLOC_DATA_MIRROR"] = str(mirror)
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def snakemake(*args, cwd, mirror=None):
    return run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--cores", "2", *args],
               cwd=cwd, mirror=mirror)
