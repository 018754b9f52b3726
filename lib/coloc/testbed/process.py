"""One testbed job's training process: from its iteration count to its last iteration, stoppable with a checkpoint.

The process is the profiler's worker (:mod:`coloc.profiler.worker`) in another mode: the same fork server,
pinning, thread count and job build, the same process group of its own and the same deaths (a lifeline pipe
the runner holds, and Linux's parent-death signal), so a killed runner leaves no training process behind.
What differs is what it runs. The profiler's worker trains until it is killed; a testbed job trains for a
fixed number of iterations, every step counted (a real job has no uncounted warm-up), and ends by itself:

* worker -> runner ``{"event": "ready", "pid", "t"}`` once built (and its checkpoint loaded, on a restart);
* after every step ``{"event": "step", "n": its iteration count, "t": when the step ended}``;
* ``{"event": "finished", "n", "t"}`` after its last iteration, then it exits;
* runner -> worker ``"stop"`` (preemption, migration): the worker ends its step, writes a checkpoint (model,
  optimizer, random state, iteration count) and answers ``{"event": "stopped", "n", "t"}``; a later process
  of the job loads it and goes on from that count.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path

from coloc.profiler import worker
from coloc.profiler.worker import JobSpec

NAME = "coloc-testbed-job"


@dataclass(frozen=True)
class Run:
    """What one process of a testbed job does: iterations ``start`` + 1 .. ``total``."""

    spec: JobSpec
    start: int
    total: int
    checkpoint: str  # the job's checkpoint file: read when start > 0, written on a stop


def main(conn, lifeline, run: Run) -> None:
    """Entry point of the process (a multiprocessing target)."""
    worker._detach(lifeline)
    try:
        job = worker._prepare(run.spec)
        if run.start > 0:
            _load(job, run)
        conn.send({"event": "ready", "pid": os.getpid(), "t": time.monotonic()})
        _train(conn, job, run)
    except (EOFError, BrokenPipeError):
        return
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a report
        worker._report_error(conn, run.spec, "train", exc)
        sys.exit(1)


def _train(conn, job, run: Run) -> None:
    n = run.start
    while n < run.total:
        if conn.poll() and conn.recv() == "stop":
            _save(job, run, n)
            conn.send({"event": "stopped", "n": n, "t": time.monotonic()})
            return
        job.step()
        worker._sync(run.spec.device)
        n += 1
        conn.send({"event": "step", "n": n, "t": time.monotonic()})
    conn.send({"event": "finished", "n": n, "t": time.monotonic()})


def _save(job, run: Run, n: int) -> None:
    import torch

    state = {"model": job.model.state_dict(), "optimizer": job.optimizer.state_dict(), "iteration": n,
             "cpu_rng": job._cpu_rng, "device_rng": job._device_rng}
    partial = f"{run.checkpoint}.part"
    torch.save(state, partial)
    os.replace(partial, run.checkpoint)


def _load(job, run: Run) -> None:
    import torch

    state = torch.load(run.checkpoint, map_location=run.spec.device, weights_only=False)
    if state["iteration"] != run.start:
        raise RuntimeError(f"checkpoint {run.checkpoint}: iteration {state['iteration']}, expected {run.start} "
                           f"(the count the runner recorded when it stopped the job)")
    job.model.load_state_dict(state["model"])
    job.optimizer.load_state_dict(state["optimizer"])
    job._cpu_rng, job._device_rng = state["cpu_rng"], state["device_rng"]


class Process:
    """The runner's handle on one training process of a job."""

    def __init__(self, context, run: Run):
        self.run = run
        self.conn, child = context.Pipe()
        life_read, self._lifeline = context.Pipe(duplex=False)
        self.process = context.Process(target=main, args=(child, life_read, run), name=f"{NAME}-{run.spec.workload}")
        self.launched = time.monotonic()
        self.process.start()
        child.close()
        life_read.close()
        self.ready: float | None = None
        self.first_step: float | None = None  # when its first step ended
        self.n, self.t = run.start, self.launched  # its latest report
        self.ended: str | None = None  # finished, stopped or an error

    def read(self) -> list[dict]:
        """The reports that have come in; an error report or a death raises RuntimeError."""
        out = []
        try:
            while self.conn.poll():
                message = self.conn.recv()
                out.append(message)
                self._take(message)
        except (EOFError, OSError):
            pass
        if self.ended is None and self.process.exitcode is not None:
            self.ended = "died"
            raise RuntimeError(f"job process of {self.run.spec.workload} (pid {self.process.pid}) died with status "
                               f"{self.process.exitcode} at iteration {self.n} of {self.run.total}")
        return out

    def _take(self, message: dict) -> None:
        event = message["event"]
        if event == "error":
            self.ended = "error"
            raise RuntimeError(f"job process of {self.run.spec.workload} failed at iteration {self.n}: "
                               f"{message['error']}")
        if event == "ready":
            self.ready = message["t"]
            return
        self.n, self.t = message["n"], message["t"]
        if event == "step" and self.first_step is None:
            self.first_step = message["t"]
        if event in ("finished", "stopped"):
            self.ended = event

    def stop(self, timeout_s: float) -> None:
        """Ask it to stop after its step and write its checkpoint; wait for that (kill it after `timeout_s`)."""
        if self.ended is None:
            try:
                self.conn.send("stop")
            except (BrokenPipeError, OSError):
                pass
            deadline = time.monotonic() + timeout_s
            while self.ended is None and time.monotonic() < deadline:
                wait([self.conn, self.process.sentinel], timeout=deadline - time.monotonic())
                self.read()
            if self.ended is None:
                raise RuntimeError(f"job process of {self.run.spec.workload} did not stop within {timeout_s:g} s")
        self.close()

    def close(self) -> None:
        """Kill its process group (it has ended or must end now) and reap it."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            if self.process.exitcode is None:
                self.process.kill()
        self.process.join(timeout=10)
        self.conn.close()
        self._lifeline.close()


def start_server(omp_wait_policy: str | None):
    """The profiler's fork server (torch and the zoo imported once), started and waited for: the first job's
    launch then costs what every later one does, not the server's imports."""
    from coloc.profiler.sweep import _context

    context = _context(omp_wait_policy)
    probe = context.Process(target=os.getpid, name=f"{NAME}-server-ready")
    probe.start()
    probe.join(timeout=300)
    return context


def checkpoint_path(folder: Path, job_id: int) -> str:
    return str(folder / f"job{job_id}.pt")
