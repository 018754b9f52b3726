"""Running the workflow from tests: Snakemake in a subprocess, with or without the data mirror; several independent
commands at once; a long run in the background while other tests run; the jobs a dry run plans, and what a target
needs among them."""
import os
import re
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


def planned(output: str) -> list[dict]:
    """The jobs a dry run (``snakemake -n``) printed, in order: each its ``rule`` and its ``input`` and ``output``
    files (lists), ``shell`` (the command, with ``-p``, else absent) and the job's other fields as printed."""
    jobs = []
    for line in output.splitlines():
        if match := re.fullmatch(r"(?:local)?rule (\S+):", line):
            jobs.append({"rule": match[1], "input": [], "output": []})
        elif jobs and (match := re.fullmatch(r"    (\w+): (.*)", line)):
            key, value = match[1], match[2]
            jobs[-1][key] = value.split(", ") if key in ("input", "output") else value
        elif jobs and line.startswith("Shell command: ") and "shell" not in jobs[-1]:
            jobs[-1]["shell"] = line[len("Shell command: "):]
    return jobs


def needed_by(jobs: list[dict], target: str) -> list[dict]:
    """The jobs of ``jobs`` (a dry run of the whole workflow from nothing, :func:`planned`) that ``target`` waits
    for, the one that makes it included: what a dry run of ``target`` alone would plan."""
    maker = {path: i for i, job in enumerate(jobs) for path in job["output"]}
    if target not in maker:
        raise AssertionError(f"no planned job makes {target}")
    todo, seen = [maker[target]], set()
    while todo:
        i = todo.pop()
        if i not in seen:
            seen.add(i)
            todo.extend(maker[path] for path in jobs[i]["input"] if path in maker)
    return [jobs[i] for i in sorted(seen)]


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
