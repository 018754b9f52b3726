"""Running the workflow from tests: Snakemake in a subprocess, with or without the data mirror; several independent
commands at once; a long run in the background while other tests run."""
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CI_CONFIG = REPO / "config" / "ci.yaml"


def environment(mirror=None) -> dict:
    """This environment with the virtual environment's bin/ first on PATH and the mirror (if any) as the data
    mirror; without one, no COLOC_DATA_MIRROR."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("COLOC_DATA_MIRROR", None)
    if mirror is not None:
        env["COLOC_DATA_MIRROR"] = str(mirror)
    return env


def run(args, cwd, mirror=None, timeout=900):
    return subprocess.run(args, cwd=cwd, env=environment(mirror), capture_output=True, text=True, timeout=timeout)


def snakemake_command(*args) -> list[str]:
    return [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--cores", "2", *args]


def snakemake(*args, cwd, mirror=None):
    return run(snakemake_command(*args), cwd=cwd, mirror=mirror)


def together(*calls):
    """The results of independent calls (functions of no argument, e.g. ``lambda: snakemake(...)``), run at once:
    each mostly waits on its own subprocess, so they share the machine's cores."""
    with ThreadPoolExecutor(len(calls)) as pool:
        return [future.result() for future in [pool.submit(call) for call in calls]]


class InBackground:
    """A command running in a subprocess from now on, its output in unnamed files (no pipe to fill); result()
    waits for it. For a long run that tests share, so that other tests run meanwhile."""

    def __init__(self, args, cwd, mirror=None, timeout=900):
        self.deadline = time.monotonic() + timeout
        self.stdout, self.stderr = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen(args, cwd=cwd, env=environment(mirror), stdout=self.stdout,
                                        stderr=self.stderr, text=True)

    def wait(self) -> int:
        """The command's exit status, once it has ended (stopped past its timeout, counted from its start)."""
        try:
            return self.process.wait(timeout=max(0.0, self.deadline - time.monotonic()))
        finally:
            self.stop()

    def result(self) -> subprocess.CompletedProcess:
        """As run() returns it, once the command has ended."""
        self.wait()
        self.stdout.seek(0)
        self.stderr.seek(0)
        return subprocess.CompletedProcess(self.process.args, self.process.returncode, self.stdout.read(),
                                           self.stderr.read())

    def stop(self):
        """Stop the command if it still runs (SIGTERM: Snakemake stops its jobs; SIGKILL after a minute)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
