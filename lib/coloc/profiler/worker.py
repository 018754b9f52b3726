"""One measured job, in its own OS process: build, barrier, warm-up, timed window, report.

The parent (:mod:`coloc.profiler.sweep`) talks to a worker over a multiprocessing pipe:

* worker -> parent ``{"event": "ready"}`` once the job is built (model, batch, optimizer);
* parent -> worker ``"go"``: the barrier; every worker of a co-located set gets it together;
* worker: warm-up steps, not counted (the first step allocates what training needs); then
  ``{"event": "window_start", "t": ...}`` and after every step ``{"event": "step", "n": steps
  since the window started, "t": when it ended, ...}``, training on until the parent ends it;
* the parent decides when every window has lasted long enough, takes each worker's last report
  as its window's end (so every counted step ran while the other jobs were training) and kills
  the workers;
* a user model's job type (``package.module:function``, :mod:`coloc.workloads.user`) is imported
  here, from the ``sys.path`` the fork server took from the sweep's process (PYTHONPATH included);
* on any exception the worker sends ``{"event": "error", ...}`` and exits with status 1.

A worker leaves its parent's process group (``os.setpgid``); a thread kills that group once
the sweep's end of a lifeline pipe closes (the sweep exited or was killed), and the kernel
kills the worker when the fork server dies (Linux ``PR_SET_PDEATHSIG``): a killed sweep
leaves no worker behind, even one stuck in a step.

``fault`` injects a failure, for tests of the error handling only: ``"oom"`` requests a
tensor of 2**60 bytes on the job's device before building (a real, impossible allocation),
``"crash"`` kills the worker with SIGSEGV after its first counted step (no report), ``"hang"``
makes it sleep after the barrier without answering (the parent's timeout ends it).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass

FAULTS = ("oom", "crash", "hang")
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class JobSpec:
    """What one worker runs and how it measures."""

    workload: str
    device: str = "cpu"              # torch device: "cpu" or "cuda:N"
    threads: int = 1                 # torch intra-op threads
    cpus: tuple[int, ...] = ()       # CPU cores the process may run on; () keeps the inherited set
    warmup_s: float = 1.0            # warm-up after the barrier, not counted (at least warmup_iters steps)
    warmup_iters: int = 1
    batch_size: int | None = None    # overrides the job type's batch (unit tests only)
    reduced: bool = False            # the zoo's reduced inputs (unit tests only)
    seed: int = 0
    env: tuple[tuple[str, str], ...] = ()  # environment set before CUDA starts (e.g. MPS pipes)
    omp_wait_policy: str | None = None     # the OMP_WAIT_POLICY the fork server must have started with
    fault: str | None = None         # injected failure for error-handling tests: oom, crash, hang


def main(conn, lifeline, spec: JobSpec) -> None:
    """Entry point of the worker process (the target of a multiprocessing Process).

    ``lifeline``: the read end of a pipe whose write end only the parent holds; when it closes
    (the parent is gone) the worker kills its own process group, even mid-step or hung.
    """
    _detach(lifeline)
    phase = "build"
    try:
        job = _prepare(spec)
        conn.send({"event": "ready", "pid": os.getpid()})
        if conn.recv() != "go":
            return
        phase = "window"
        _measure(conn, job, spec)
    except (EOFError, BrokenPipeError):
        return  # the parent is gone: leave quietly
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a report
        _report_error(conn, spec, phase, exc)
        sys.exit(1)


def _detach(lifeline) -> None:
    """Own process group; die with the sweep (lifeline) and with the fork server (Linux death signal).

    The worker stays in the sweep's session: with Linux's autogroup scheduling, CPU time is
    shared between sessions first, so a worker in a session of its own would win a larger share
    of a busy machine the more workers run, and co-located jobs would look faster than they are.
    """
    parent = os.getppid()
    os.setpgid(0, 0)
    threading.Thread(target=_watch, args=(lifeline,), name="coloc-lifeline", daemon=True).start()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the closed pipe still ends the worker
    if os.getppid() != parent:
        os._exit(0)


def _watch(lifeline) -> None:
    try:
        lifeline.recv()
    except (EOFError, OSError):
        pass
    os.killpg(os.getpgid(0), signal.SIGKILL)


def _prepare(spec: JobSpec):
    """Pin the process, set threads, build the job (its first step is part of the warm-up)."""
    found = os.environ.get("OMP_WAIT_POLICY")
    if spec.omp_wait_policy is not None and found != spec.omp_wait_policy:
        raise RuntimeError(f"OMP_WAIT_POLICY is {found!r} in this worker, expected {spec.omp_wait_policy!r}: this "
                           "Python process's fork server started earlier without it; rerun in a new Python process")
    for key, value in spec.env:
        os.environ[key] = value
    if spec.cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, spec.cpus)
    import torch

    from coloc import workloads

    torch.set_num_threads(spec.threads)
    if spec.device.startswith("cuda"):
        torch.cuda.set_device(torch.device(spec.device))
    if spec.fault == "oom":
        torch.empty(2**60, dtype=torch.uint8, device=spec.device)
    return workloads.build(spec.workload, device=spec.device, batch_size=spec.batch_size, seed=spec.seed,
                           reduced=spec.reduced)


def _measure(conn, job, spec: JobSpec) -> None:
    """Warm-up, then report every counted step until the parent ends the process."""
    go = time.monotonic()
    warm = 0
    while warm < spec.warmup_iters or time.monotonic() - go < spec.warmup_s:
        job.step()
        _sync(spec.device)
        warm += 1
    if spec.fault == "hang":
        while True:
            time.sleep(3600)
    t0, cpu0 = time.monotonic(), time.process_time()
    conn.send({"event": "window_start", "t": t0, "cpu_s": cpu0, "go": go, "warmup_iters": warm})
    count = 0
    while True:
        job.step()
        _sync(spec.device)
        count += 1
        conn.send({"event": "step", "n": count, "t": time.monotonic(), "cpu_s": time.process_time(),
                   **_memory(spec.device)})
        if spec.fault == "crash":
            _crash()


def _memory(device: str) -> dict:
    """Peak memory so far: resident (the process), and on a GPU what torch allocated and reserved."""
    out = {"max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    if device.startswith("cuda"):
        import torch

        out["gpu_mem_allocated_bytes"] = int(torch.cuda.max_memory_allocated())
        out["gpu_mem_reserved_bytes"] = int(torch.cuda.max_memory_reserved())
    return out


def _sync(device: str) -> None:
    """Wait for the device to finish the step (CUDA runs asynchronously)."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _crash() -> None:
    """Injected crash (tests only): die by SIGSEGV, without a core file and without a report."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(60)


def _report_error(conn, spec: JobSpec, phase: str, exc: BaseException) -> None:
    message = f"{type(exc).__name__}: {exc}".strip()
    if len(message) > 2000:
        message = message[:2000] + " ..."
    try:
        conn.send({"event": "error", "phase": phase, "error": message,
                   "traceback": "".join(traceback.format_exception(exc))[-4000:]})
    except (OSError, EOFError, BrokenPipeError):
        pass
