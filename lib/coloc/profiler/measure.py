"""One measurement: a set of jobs, each in its own worker process, started together and timed.

The parent starts the workers (forked from the fork server), waits until each has built its
job, releases them together (the barrier) and samples the device while they train. Each worker
reports every step of its counted window; once every window has lasted ``window_s`` and
``min_iters`` steps, the parent takes each worker's last report as its window's end, so every
counted step ran while all the other jobs were training too, and kills the workers' process
groups. An error report, a worker that dies, or the timeout ends the measurement as failed,
with its outcome (:mod:`coloc.profiler.outcome`): out_of_memory, timeout or error.
"""

from __future__ import annotations

import os
import platform
import signal
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from multiprocessing.connection import wait

from . import outcome
from .sampler import Sampler, summarize
from .worker import JobSpec, main

LOG_VERSION = 3  # 3: outcome, and feasible null when unknown (2: feasible false on any failure)
WORKER_NAME = "coloc-worker"


@dataclass
class _Worker:
    workload: str
    process: object
    conn: object
    lifeline: object  # the write end: closing it (or dying) makes the worker kill its process group
    ready: bool = False
    start: dict | None = None  # the window_start report
    last: dict | None = None   # the latest step report


def measure(m, record_key: str, device, threads: int, settings, context, sampler: Sampler, env=()) -> dict:
    """Run the jobs of measurement ``m`` together; its log record (``outcome``: see :mod:`.outcome`)."""
    faults = dict(settings.faults)
    specs = [JobSpec(workload=w, device=device.torch_device, threads=threads, cpus=device.cpus,
                     warmup_s=settings.warmup_s, warmup_iters=settings.warmup_iters, batch_size=settings.batch_size,
                     reduced=settings.reduced, seed=settings.seed, env=tuple(env),
                     omp_wait_policy=settings.omp_wait_policy, fault=faults.get(w)) for w in m.workloads]
    started, t_start = datetime.now(timezone.utc), time.monotonic()
    deadline = t_start + settings.timeout_s
    workers: list[_Worker] = []
    samples: list[dict] = []
    marks: dict[str, float] = {}  # when the workers were ready, their windows done, all gone

    def window_done(w: _Worker) -> bool:
        return (w.start is not None and w.last is not None and w.last["n"] >= settings.min_iters
                and w.last["t"] - w.start["t"] >= settings.window_s)

    try:
        for spec in specs:
            workers.append(_start(context, spec))
        failure = _wait_until(workers, lambda w: w.ready, "build", deadline, settings.timeout_s)
        marks["ready"] = time.monotonic()
        if failure is None:
            sampler.start([w.process.pid for w in workers])
            try:
                for w in workers:
                    w.conn.send("go")
                failure = _wait_until(workers, window_done, "window", deadline, settings.timeout_s)
                marks["windows_done"] = time.monotonic()
            finally:
                samples = sampler.stop()
    finally:
        _terminate(workers)
    marks["end"] = time.monotonic()
    record = _record(m, record_key, device, settings, threads, workers, samples, failure)
    record.update(started_utc=started.isoformat(timespec="seconds"), wall_s=round(marks["end"] - t_start, 3),
                  timeline_s={name: round(t - t_start, 3) for name, t in marks.items()})
    return record


def _start(context, spec: JobSpec) -> _Worker:
    parent_end, child_end = context.Pipe()
    life_read, life_write = context.Pipe(duplex=False)
    process = context.Process(target=main, args=(child_end, life_read, spec), name=f"{WORKER_NAME}-{spec.workload}")
    process.start()
    child_end.close()
    life_read.close()
    return _Worker(spec.workload, process, parent_end, life_write)


def _wait_until(workers: list[_Worker], done, phase: str, deadline: float, timeout_s: float) -> dict | None:
    """Read reports until ``done(w)`` holds for every worker; the first failure otherwise."""
    while True:
        for w in workers:
            failure = _read(w, phase)
            if failure is not None:
                return failure
        pending = [w for w in workers if not done(w)]
        if not pending:
            return None
        left = deadline - time.monotonic()
        if left <= 0:
            names = ", ".join(w.workload for w in pending)
            return {"workload": pending[0].workload, "phase": phase, "outcome": outcome.TIMEOUT,
                    "error": f"timeout: {names} did not finish its {phase} within {timeout_s:g} s"}
        wait([w.conn for w in workers] + [w.process.sentinel for w in workers], timeout=left)


def _read(w: _Worker, phase: str) -> dict | None:
    """Take the worker's reports; a failure when it reported an error or has died."""
    try:
        while w.conn.poll():
            message = w.conn.recv()
            event = message.get("event")
            if event == "error":
                return {"workload": w.workload, "phase": message.get("phase", phase), "error": message["error"],
                        "outcome": outcome.of_error(message["error"]), "traceback": message.get("traceback")}
            if event == "ready":
                w.ready = True
            elif event == "window_start":
                w.start = message
            elif event == "step":
                w.last = message
    except (EOFError, OSError):
        pass
    if w.process.exitcode is not None:
        return {"workload": w.workload, "phase": phase, "outcome": outcome.ERROR,
                "error": _death(w.process.exitcode, phase)}
    return None


def _death(exitcode: int, phase: str) -> str:
    if exitcode < 0:
        name = signal.Signals(-exitcode).name
        hint = " (killed: out of memory?)" if name == "SIGKILL" else ""
        return f"crashed: the worker died by {name}{hint} during its {phase}"
    return f"crashed: the worker exited with status {exitcode} during its {phase}"


def _terminate(workers: list[_Worker]) -> None:
    """SIGKILL every worker's process group (their measurements are in), then reap them."""
    for w in workers:
        try:
            os.killpg(w.process.pid, signal.SIGKILL)
        except ProcessLookupError:  # no such group: still starting, not yet in its own group (or gone)
            w.process.kill()
        except PermissionError:
            pass
    for w in workers:
        w.process.join(timeout=10)
        w.conn.close()
        w.lifeline.close()


def _record(m, record_key, device, settings, threads, workers, samples, failure) -> dict:
    result = outcome.OK if failure is None else failure["outcome"]
    record = {"key": record_key, "version": LOG_VERSION, "device": device.name, "device_kind": device.kind,
              "workloads": list(m.workloads), "kind": m.kind, "repeat": m.repeat,
              "outcome": result, "feasible": outcome.feasible(result), "error": None, "failed_workload": None,
              "failed_phase": None, "jobs": [], "device_metrics": {}, "window_overlap": None,
              "settings": {**asdict(settings), "device": device.name, "torch_device": device.torch_device,
                           "cpus": list(device.cpus), "threads": threads, "faults": [list(f) for f in settings.faults]},
              "host": platform.node()}
    record["jobs"] = [_job_entry(slot, w, failure, len(device.cpus)) for slot, w in enumerate(workers)]
    if failure is not None:
        record.update(error=failure["error"], failed_workload=failure["workload"], failed_phase=failure["phase"],
                      traceback=failure.get("traceback"))
        return record
    starts, ends = [w.start["t"] for w in workers], [w.last["t"] for w in workers]
    union = max(ends) - min(starts)
    record["window_overlap"] = max(0.0, min(ends) - max(starts)) / union if union > 0 else None
    pids = [w.process.pid for w in workers]
    common = (max(starts), min(ends)) if max(starts) < min(ends) else (min(starts), max(ends))
    record["device_metrics"], per_pid = summarize(samples, *common, pids, len(device.cpus))
    for job, pid in zip(record["jobs"], pids, strict=True):
        job.update(per_pid.get(pid, {}))
    return record


def _job_entry(slot: int, w: _Worker, failure, n_cpus: int) -> dict:
    entry = {"slot": slot, "workload": w.workload, "pid": w.process.pid}
    if failure is None:
        elapsed = w.last["t"] - w.start["t"]
        cpu_s = w.last["cpu_s"] - w.start["cpu_s"]
        entry.update(iterations=w.last["n"], elapsed_s=elapsed, throughput=w.last["n"] / elapsed, cpu_s=cpu_s,
                     cpu_util=100.0 * cpu_s / (elapsed * n_cpus), warmup_iters=w.start["warmup_iters"],
                     warmup_s=w.start["t"] - w.start["go"], window_start=w.start["t"], window_end=w.last["t"])
        entry.update({k: v for k, v in w.last.items() if k.endswith("_bytes")})
    elif failure["workload"] == w.workload:
        entry["error"] = failure["error"]
    return entry
