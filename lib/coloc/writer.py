"""A workflow job dies with the Snakemake that started it, and a folder of resumable work has one writer at a time.

A Snakemake killed with SIGKILL cannot stop its jobs: the papermill job of a rule went on alone, and a rerun after
``snakemake --unlock`` started a second writer in the same work folder (two runs renaming into one folder:
``OSError: Directory not empty``), while the orphan's outputs later looked up to date. Two guards:

* :func:`watch_launcher`: the workflow (``common.smk``) puts its Snakemake's pid into ``COLOC_LAUNCHER_PID``, which
  every job inherits; a job's process watches that process (pid and start time, so a reused pid is not mistaken for
  it) and exits with status 1 once it is gone, within :data:`POLL_S` seconds. Every notebook starts it
  (``coloc.params.check``); outside a workflow (no variable) nothing is watched.
* :func:`claim`: the process takes an exclusive lock on ``<folder>/.writer`` for as long as it lives, and writes its
  pid, host and start there; a second writer is refused with the holder's pid, host and start. The operating system
  drops the lock when the holder dies, however it dies, so a stale lock cannot block a resume.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import threading
import time
from pathlib import Path

LAUNCHER_VARIABLE = "COLOC_LAUNCHER_PID"
POLL_S = 1.0
_held: dict[Path, object] = {}  # folder -> its open lock file, kept open while this process lives
_watching: list[int] = []


class FolderBusy(RuntimeError):
    """Another live process holds the folder; the message names it and what to do."""


def claim(folder: str | Path) -> Path:
    """Make this process the only writer of ``folder`` (created if missing) while it lives; :class:`FolderBusy` if
    another live process is writing it. A second claim by the same process is a no-op."""
    folder = Path(folder).resolve()
    if folder in _held:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / ".writer", "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "a process that has not written its name yet"
        handle.close()
        raise FolderBusy(f"{folder} is being written by {holder}: another job of this rule is still running, "
                         f"probably left by a killed Snakemake; wait for it to end or end it (kill <pid>), "
                         f"then run again") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n")
    handle.flush()
    _held[folder] = handle
    return folder


def watch_launcher(environ=os.environ) -> int | None:
    """Exit this process (status 1, the reason on stderr) once the process named by ``COLOC_LAUNCHER_PID`` is gone;
    the pid watched, or None where the variable is unset (not a workflow job). Starts one watcher per process."""
    text = environ.get(LAUNCHER_VARIABLE)
    if not text:
        return None
    pid = int(text)
    if _watching:
        return _watching[0]
    started = _start_time(pid)
    if started is None:
        _stop(pid)
    _watching.append(pid)
    threading.Thread(target=_watch, args=(pid, started), name="coloc-launcher-watch", daemon=True).start()
    return pid


def _watch(pid: int, started: str) -> None:
    while _start_time(pid) == started:
        time.sleep(POLL_S)
    _stop(pid)


def _stop(pid: int) -> None:
    print(f"coloc: the Snakemake process {pid} that started this job is gone; this job stops so that no orphan "
          f"writes its outputs (rerun: snakemake --unlock, then snakemake)", file=sys.stderr, flush=True)
    os._exit(1)


def _start_time(pid: int) -> str | None:
    """The process's start time (Linux: field 22 of /proc/<pid>/stat), "" where /proc is missing and the process
    exists, None if there is no such process or it has exited (a zombie)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return None if fields[0] in ("Z", "X") else fields[19]
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return ""
