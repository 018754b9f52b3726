"""Running the workflow from tests: Snakemake in a subprocess, with or without the data mirror; several independent
commands at once; a long run in the background while other tests run; the jobs a dry run plans, and what a target
needs among them."""
import os
import re
import shutil
import subprocess
import sys
import threading
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


def copy_workflow_and_run(run: Path, repo: Path, workdir: Path) -> None:
    """Copy this repository's workflow and library into ``repo`` and a finished run's outputs (folder ``run``) into
    ``workdir``, modification times kept (so the copy has nothing to do)."""
    repo.mkdir(parents=True)
    for name in ("Snakefile", "environment.yml"):
        shutil.copy2(REPO / name, repo / name)
    for part in ("workflow", "profiles", "config", "notebooks", "lib"):
        shutil.copytree(REPO / part, repo / part)
    for part in ("data", "results", "figures", "logs"):
        shutil.copytree(run / part, workdir / part)


def write_whole(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that it appears whole (another process may be polling for it: wait_for)."""
    temporary = path.with_name(path.name + ".partial")
    temporary.write_bytes(data)
    temporary.replace(path)


def wait_for(path: Path, timeout: float, poll_s: float = 0.5) -> bool:
    """Whether ``path`` exists within ``timeout`` seconds (polled)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(poll_s)
    return True


class SharedRun:
    """A long command that every process of one test session shares (pytest-xdist runs the tests in several): the
    first process to call start() runs it in the background, in ``folder``/work (an atomic mkdir of ``folder``
    decides which process), its output and exit status written to files in ``folder``; result() reads them in any
    process, once the command has ended. For a long run that tests share, so that other tests run meanwhile."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.workdir = folder / "work"
        self.process = None  # the command, in the process that started it
        self.waiter = None  # that process's thread that records the exit status

    def start(self, args, mirror=None, timeout=900, then=None) -> bool:
        """Start the command unless a process of the session has (True if this one did); ``then``, if given, runs
        after it in the same background thread, with its exit status."""
        try:
            self.folder.mkdir()
        except FileExistsError:
            return False
        self.workdir.mkdir()
        with open(self.folder / "stdout", "w") as out, open(self.folder / "stderr", "w") as err:
            self.process = subprocess.Popen(args, cwd=self.workdir, env=environment(mirror), stdout=out, stderr=err,
                                            text=True)
        self.waiter = threading.Thread(target=self._record, args=(timeout, then), name="shared-run", daemon=True)
        self.waiter.start()
        return True

    def _record(self, timeout, then):
        try:
            returncode = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._terminate()
            returncode = self.process.returncode
        write_whole(self.folder / "returncode", str(returncode).encode())  # other processes poll for it
        if then is not None:
            then(returncode)

    def wait(self, timeout=1800) -> int:
        """The command's exit status, once it has ended (in any process of the session)."""
        done = self.folder / "returncode"
        if not wait_for(done, timeout):
            raise TimeoutError(f"{self.folder}: the shared run has not ended in {timeout} s")
        return int(done.read_text())

    def result(self) -> subprocess.CompletedProcess:
        """As run() returns it, once the command has ended."""
        returncode = self.wait()
        return subprocess.CompletedProcess(self.folder.name, returncode, (self.folder / "stdout").read_text(),
                                           (self.folder / "stderr").read_text())

    def finish(self, others_may_need_it: bool):
        """At the end of this process's session, in the process that started the command: wait for it to end if
        other processes of the session may still read it (pytest-xdist's other workers), else stop it."""
        if self.process is None:
            return
        if not others_may_need_it:
            self._terminate()
        self.waiter.join()

    def _terminate(self):
        """Stop the command if it still runs (SIGTERM: Snakemake stops its jobs; SIGKILL after a minute)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
