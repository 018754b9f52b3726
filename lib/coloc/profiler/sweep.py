"""Plans the measurements, runs each in fresh worker processes, and logs each as it finishes.

A measurement is one set of job types run together (one job: solo) in one repeat. Each job
runs in its own OS process (:mod:`coloc.profiler.worker`), forked from a multiprocessing
fork server that has imported torch and the zoo already, so a process starts in a fraction
of a second. The workers of a set start together at a barrier; the parent samples the device
while they run, stops them once every counted window is done, and appends the record to the
log at once. A failure (error, out of memory, crash, timeout) is a record with
``feasible: false`` and the error; the sweep goes on. Workers are killed by process group
on timeout, error and KeyboardInterrupt; a killed sweep's workers die with it.

Contention on a CPU: every job of a set is pinned to the same core set and, by default,
uses as many threads as the set has cores, the way jobs sharing one GPU each see the whole
device; the operating system time-slices them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import multiprocessing as mp
import os
import platform
import signal
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from multiprocessing.connection import wait

import numpy as np
from tqdm import tqdm

from coloc import workloads

from . import hardware, journal
from .errors import ProfilerError
from .sampler import NvmlProbe, PsutilProbe, Sampler, open_nvml, summarize
from .worker import FAULTS, JobSpec, main

LOG_VERSION = 1
_WORKER_NAME = "coloc-worker"
_PHASE = {"ready": "build", "window_done": "window", "result": "window"}  # what a worker does before each report
_PRELOAD = ["torch", "torch._dynamo", "coloc.workloads", "coloc.profiler.worker"]  # torch.optim imports _dynamo lazily: 2 s


@dataclass(frozen=True)
class Settings:
    """How every job of a sweep is run and measured."""

    device: str = "auto"                 # auto (the CUDA GPU if any, else the CPU), cpu, cuda, cuda:N
    cpus: tuple[int, ...] | None = None  # cores the jobs share; None: every core this process may use
    threads: int | None = None           # torch threads per job; None: one per core of the set
    warmup_s: float = 1.0                # warm-up after the barrier, not counted ...
    warmup_iters: int = 1                # ... of at least this many steps
    window_s: float = 3.0                # counted window: at least this long ...
    min_iters: int = 2                   # ... and this many steps
    timeout_s: float = 120.0             # per measurement, from process start to the last report
    mps: bool = False                    # CUDA MPS daemon on while measuring (GPU only)
    batch_size: int | None = None        # override every job's batch size (unit tests only)
    reduced: bool = False                # the zoo's reduced inputs (unit tests only)
    seed: int = 0                        # model init and synthetic batch of every job
    sample_interval_s: float = 0.2       # device sampler period
    faults: tuple[tuple[str, str], ...] = ()  # (workload, fault) injected failures, error-handling tests only

    def __post_init__(self):
        checks = [(self.warmup_s >= 0, "warmup_s", "a number >= 0"), (self.warmup_iters >= 0, "warmup_iters", ">= 0"),
                  (self.window_s > 0, "window_s", "a number > 0"), (self.min_iters >= 1, "min_iters", ">= 1"),
                  (self.timeout_s > 0, "timeout_s", "a number > 0"),
                  (self.threads is None or self.threads >= 1, "threads", "null or >= 1"),
                  (self.batch_size is None or self.batch_size >= 1, "batch_size", "null or >= 1")]
        for ok, key, expected in checks:
            if not ok:
                raise ProfilerError(f"profiler setting {key} = {getattr(self, key)!r}: expected {expected}")
        for workload, fault in self.faults:
            if fault not in FAULTS:
                raise ProfilerError(f"fault {fault!r} for {workload}: expected one of {FAULTS}")


@dataclass(frozen=True)
class Measurement:
    """One set of job types (sorted; one: solo) measured together, in one repeat."""

    workloads: tuple[str, ...]
    repeat: int

    @property
    def kind(self) -> str:
        return {1: "solo", 2: "pair"}.get(len(self.workloads), "set")


def plan(names, repeats: int = 1, set_sizes=(2,), seed: int = 0, shuffle: bool = True) -> list[Measurement]:
    """Every job type solo and every multiset of each size in ``set_sizes`` (self-pairs included), per repeat.

    Repeats run round by round (all of round 0, then round 1, ...); within a round the order is
    shuffled with a generator derived from (seed, round), so slow drift of the machine's load
    spreads over all measurements instead of biasing some.
    """
    names = list(names)
    known = set(workloads.names())
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ProfilerError(f"job types {unknown or names}: expected names from coloc.workloads.names()")
    if len(set(names)) != len(names):
        raise ProfilerError(f"job types {names}: each may appear once")
    set_sizes = sorted(set(int(k) for k in set_sizes))
    if repeats < 1 or any(k < 2 for k in set_sizes):
        raise ProfilerError(f"repeats {repeats}, set_sizes {set_sizes}: expected repeats >= 1 and sizes >= 2")
    sets = [(n,) for n in sorted(names)]
    for k in set_sizes:
        sets += list(itertools.combinations_with_replacement(sorted(names), k))
    out = []
    for repeat in range(repeats):
        order = np.random.default_rng([seed, repeat]).permutation(len(sets)) if shuffle else range(len(sets))
        out += [Measurement(sets[i], repeat) for i in order]
    return out


@dataclass
class _Worker:
    workload: str
    process: mp.Process
    conn: object
    lifeline: object  # the write end: closing it (or dying) makes the worker kill its process group
    events: dict = field(default_factory=dict)


def run(measurements, log_path, settings: Settings = Settings(), progress: bool = True,
        retry_failed: bool = False) -> list[dict]:
    """Measure what the log lacks, appending each record at once; every planned record, in plan order.

    Workers start from a fork server, which imports the caller's main module the way
    multiprocessing does: a script that calls this must do so under ``if __name__ == "__main__":``.
    """
    if mp.current_process().name.startswith(_WORKER_NAME):
        raise ProfilerError("coloc.profiler.run was called while a worker process imported the main module: "
                            "call it under `if __name__ == \"__main__\":` in scripts")
    device = hardware.resolve(settings.device, settings.cpus)
    threads = settings.threads or len(device.cpus)
    keys = [key(m, device, threads, settings) for m in measurements]
    with journal.locked(log_path):
        done = {r["key"]: r for r in journal.read(log_path) if not retry_failed or r.get("feasible")}
        todo = [(k, m) for k, m in zip(keys, measurements) if k not in done]
        if todo:
            sampler = Sampler(_probes(device), settings.sample_interval_s)
            with hardware.mps_daemon(settings.mps, device) as env:
                context = _context()
                for k, m in tqdm(todo, desc=f"profiling on {device.name}", disable=not progress, mininterval=2):
                    record = measure(m, k, device, threads, settings, context, sampler, env)
                    done[k] = journal.append(log_path, record)
    return [done[k] for k in keys]


def key(m: Measurement, device: hardware.Device, threads: int, settings: Settings) -> str:
    """The measurement's identity in the log: device, set, repeat and everything that changes a result."""
    faults = sorted((w, f) for w, f in settings.faults if w in m.workloads)
    relevant = {"cpus": list(device.cpus), "threads": threads, "warmup_s": settings.warmup_s,
                "warmup_iters": settings.warmup_iters, "window_s": settings.window_s, "min_iters": settings.min_iters,
                "mps": settings.mps, "batch_size": settings.batch_size, "reduced": settings.reduced,
                "seed": settings.seed, "faults": faults}
    digest = hashlib.sha1(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:12]
    return f"{device.name}|{'+'.join(m.workloads)}|r{m.repeat}|{digest}"


def _probes(device: hardware.Device) -> list:
    probes = [PsutilProbe(device.cpus)]
    if device.kind == "gpu":
        try:
            nvml, handle = open_nvml(int(device.torch_device.split(":")[1]))
            probes.append(NvmlProbe(nvml, handle))
        except ProfilerError as exc:
            import warnings

            warnings.warn(f"coloc.profiler: GPU metrics not sampled: {exc}", RuntimeWarning, stacklevel=3)
    return probes


def _context():
    """The fork-server context; its server imports torch and the zoo once for every worker."""
    context = mp.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return context


def measure(m: Measurement, record_key: str, device: hardware.Device, threads: int, settings: Settings,
            context, sampler: Sampler, env=()) -> dict:
    """Run one set of jobs together and return its log record (``feasible`` False on any failure)."""
    faults = dict(settings.faults)
    specs = [JobSpec(workload=w, device=device.torch_device, threads=threads, cpus=device.cpus,
                     warmup_s=settings.warmup_s, warmup_iters=settings.warmup_iters, window_s=settings.window_s,
                     min_iters=settings.min_iters, batch_size=settings.batch_size, reduced=settings.reduced,
                     seed=settings.seed, env=tuple(env), fault=faults.get(w)) for w in m.workloads]
    started, t_start = datetime.now(timezone.utc), time.monotonic()
    deadline = t_start + settings.timeout_s
    workers: list[_Worker] = []
    samples: list[dict] = []
    marks: dict[str, float] = {}  # when the workers were ready, their windows done, all gone
    failure = None
    try:
        for spec in specs:
            workers.append(_start(context, spec))
        failure = _await(workers, "ready", deadline, settings.timeout_s)
        marks["ready"] = time.monotonic()
        if failure is None:
            sampler.start([w.process.pid for w in workers])
            try:
                for w in workers:
                    w.conn.send("go")
                failure = _await(workers, "window_done", deadline, settings.timeout_s)
                marks["windows_done"] = time.monotonic()
                if failure is None:
                    for w in workers:
                        w.conn.send("stop")
                    failure = _await(workers, "result", deadline, settings.timeout_s)
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
    process = context.Process(target=main, args=(child_end, life_read, spec), name=f"{_WORKER_NAME}-{spec.workload}",
                              daemon=False)
    process.start()
    child_end.close()
    life_read.close()
    return _Worker(spec.workload, process, parent_end, life_write)


def _await(workers: list[_Worker], event: str, deadline: float, timeout_s: float) -> dict | None:
    """Wait until every worker sent ``event``; the first failure (error, death, timeout) otherwise."""
    while True:
        pending = [w for w in workers if event not in w.events]
        if not pending:
            return None
        left = deadline - time.monotonic()
        if left <= 0:
            names = ", ".join(w.workload for w in pending)
            return {"workload": pending[0].workload, "phase": _PHASE[event],
                    "error": f"timeout: {names} did not report {event!r} within {timeout_s:g} s"}
        wait([w.conn for w in pending] + [w.process.sentinel for w in pending], timeout=left)
        for w in pending:
            failure = _read(w, event)
            if failure is not None:
                return failure


def _read(w: _Worker, event: str) -> dict | None:
    """Take the worker's messages; a failure when it reported an error or died without reporting."""
    try:
        while w.conn.poll():
            message = w.conn.recv()
            if message.get("event") == "error":
                return {"workload": w.workload, "phase": message.get("phase", _PHASE[event]), "error": message["error"],
                        "traceback": message.get("traceback")}
            w.events[message["event"]] = message
    except (EOFError, OSError):
        pass
    if event not in w.events and w.process.exitcode is not None:
        return {"workload": w.workload, "phase": _PHASE[event], "error": _death(w.process.exitcode, event)}
    return None


def _death(exitcode: int, event: str) -> str:
    if exitcode < 0:
        name = signal.Signals(-exitcode).name
        hint = " (killed: out of memory?)" if name == "SIGKILL" else ""
        return f"crashed: the worker died by {name}{hint} before reporting {event!r}"
    return f"crashed: the worker exited with status {exitcode} before reporting {event!r}"


def _terminate(workers: list[_Worker], grace_s: float = 2.0) -> None:
    """Stop every worker: a short grace to exit, then SIGKILL to its whole process group."""
    end = time.monotonic() + grace_s
    for w in workers:
        w.process.join(timeout=max(0.0, end - time.monotonic()))
    for w in workers:
        try:
            os.killpg(w.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        w.process.join(timeout=5)
        w.conn.close()
        w.lifeline.close()


def _record(m, record_key, device, settings, threads, workers, samples, failure) -> dict:
    jobs = [_job_entry(slot, w, failure) for slot, w in enumerate(workers)]
    record = {"key": record_key, "version": LOG_VERSION, "device": device.name, "device_kind": device.kind,
              "workloads": list(m.workloads), "kind": m.kind, "repeat": m.repeat,
              "feasible": failure is None, "error": None, "failed_workload": None, "failed_phase": None,
              "jobs": jobs, "device_metrics": {}, "window_overlap": None,
              "settings": {**asdict(settings), "device": device.name, "torch_device": device.torch_device,
                           "cpus": list(device.cpus), "threads": threads, "faults": [list(f) for f in settings.faults]},
              "host": platform.node()}
    if failure is not None:
        record.update(error=failure["error"], failed_workload=failure["workload"], failed_phase=failure["phase"],
                      traceback=failure.get("traceback"))
        return record
    results = [w.events["result"] for w in workers]
    start, end = max(r["window_start"] for r in results), min(r["window_end"] for r in results)
    union = max(r["window_end"] for r in results) - min(r["window_start"] for r in results)
    record["window_overlap"] = max(0.0, end - start) / union if union > 0 else None
    pids = [r["pid"] for r in results]
    record["device_metrics"], per_pid = summarize(samples, min(start, end), max(start, end), pids, len(device.cpus))
    for job, r in zip(jobs, results):
        job.update(per_pid.get(r["pid"], {}))
        job["cpu_util"] = 100.0 * r["cpu_s"] / (r["elapsed_s"] * len(device.cpus)) if r["elapsed_s"] > 0 else None
    return record


def _job_entry(slot: int, w: _Worker, failure) -> dict:
    entry = {"slot": slot, "workload": w.workload, "pid": w.process.pid, "exitcode": w.process.exitcode}
    result = w.events.get("result")
    if result is not None and failure is None:
        entry.update({k: result[k] for k in ("iterations", "elapsed_s", "throughput", "cpu_s", "threads",
                                             "max_rss_bytes", "window_start", "window_end")})
        entry.update({k: v for k, v in result.items() if k.startswith("gpu_mem_")})
    if failure is not None and failure["workload"] == w.workload:
        entry["error"] = failure["error"]
    return entry
