"""Plans the measurements, runs each in fresh worker processes, and logs each as it finishes.

A measurement is one set of job types run together (one job: solo) in one repeat. Each job
runs in its own OS process (:mod:`coloc.profiler.worker`), forked from a multiprocessing
fork server that has imported torch and the zoo already, so a process starts in a fraction
of a second. The workers of a set start together at a barrier; the parent samples the device
while they run, ends them once every counted window is done (:mod:`coloc.profiler.measure`),
and appends the record to the log at once. A failure is a record with its outcome (out_of_memory:
``feasible`` false; timeout or error: ``feasible`` null), its error and the settings it ran under;
the sweep goes on. A rerun measures again what could come out differently: every error, and a
timeout when ``timeout_s`` is now longer (:mod:`coloc.profiler.outcome`). Workers are killed by
process group on timeout, error and KeyboardInterrupt; a killed sweep's workers die with it.

Contention on a CPU: every job of a set is pinned to the same core set and, by default,
uses as many threads as the set has cores, the way jobs sharing one GPU each see the whole
device; the operating system time-slices them.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import multiprocessing as mp
import os
import sys
import warnings
from dataclasses import dataclass
from multiprocessing import forkserver

import numpy as np
from tqdm import tqdm

from coloc import workloads

from . import hardware, journal, outcome
from .errors import ProfilerError
from .measure import WORKER_NAME, measure
from .sampler import NvmlProbe, PsutilProbe, Sampler, open_nvml
from .worker import FAULTS

# imported once by the fork server; torch.optim imports torch._dynamo lazily, 2 s in every worker otherwise
_PRELOAD = ["torch", "torch._dynamo", "coloc.workloads", "coloc.profiler.worker"]


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
    omp_wait_policy: str | None = "PASSIVE"  # OpenMP threads sleep when idle; None: the environment's
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
        if self.omp_wait_policy not in (None, "PASSIVE", "ACTIVE"):
            raise ProfilerError(f"omp_wait_policy {self.omp_wait_policy!r}: expected 'PASSIVE', 'ACTIVE' or null")
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


def plan(names, repeats: int = 1, set_sizes=(2,), seed: int = 0, shuffle: bool = True,
         sets=()) -> list[Measurement]:
    """Every job type solo, every multiset of each size in ``set_sizes`` (self-pairs included), then the
    chosen ``sets`` (each a multiset of ``names``: a job type may appear more than once), per repeat.

    ``sets`` measures a few sets of a size too costly to measure in full (size 3 over 4 job types has
    20 multisets); a chosen set that ``set_sizes`` plans already is planned once.

    A job type is a zoo name or a user model's import path (:mod:`coloc.workloads.user`; the worker
    imports it, so it must be on PYTHONPATH or installed).

    Repeats run round by round (all of round 0, then round 1, ...); within a round the order is
    shuffled with a generator derived from (seed, round), so slow drift of the machine's load
    spreads over all measurements instead of biasing some.
    """
    names = list(names)
    unknown = [n for n in names if not workloads.known(n)]
    if unknown or not names:
        raise ProfilerError(f"job types {unknown or names}: expected names from coloc.workloads.names(), or user "
                            f"models' import paths {workloads.user.FORM}")
    if len(set(names)) != len(names):
        raise ProfilerError(f"job types {names}: each may appear once")
    check(names)
    set_sizes = sorted(set(int(k) for k in set_sizes))
    if repeats < 1 or any(k < 2 for k in set_sizes):
        raise ProfilerError(f"repeats {repeats}, set_sizes {set_sizes}: expected repeats >= 1 and sizes >= 2")
    chosen = [tuple(sorted(s)) for s in sets]
    for i, members in enumerate(chosen):
        strangers = sorted(set(members) - set(names))
        if len(members) < 2 or strangers:
            raise ProfilerError(f"sets[{i}] {list(sets[i])}: expected 2 or more of the job types {names}"
                                + (f"; {strangers} are not among them" if strangers else ""))
    planned = [(n,) for n in sorted(names)]
    for k in set_sizes:
        planned += list(itertools.combinations_with_replacement(sorted(names), k))
    planned = list(dict.fromkeys(planned + chosen))
    out = []
    for repeat in range(repeats):
        order = np.random.default_rng([seed, repeat]).permutation(len(planned)) if shuffle else range(len(planned))
        out += [Measurement(planned[i], repeat) for i in order]
    return out


def check(names, timeout_s: float = Settings.timeout_s,
          omp_wait_policy: str | None = Settings.omp_wait_policy) -> dict[str, str]:
    """Import and build every user model among ``names`` on the meta device, computing its loss, each in a
    worker process (forked from the fork server, as the measurements are) given at most ``timeout_s``: a
    ProfilerError naming the path when its module, its function or what it returns is not as expected
    (:mod:`coloc.workloads.user`), or when building it takes longer, before anything is measured. Zoo names
    are left to :func:`plan`.

    Returns each user model's fingerprint (:func:`model_fingerprint`), part of its measurements' log keys."""
    users = [name for name in dict.fromkeys(names) if workloads.user.is_path(name)]
    if not users:
        return {}
    context = _context(omp_wait_policy)
    return {name: _checked_in_worker(context, name, timeout_s) for name in users}


def model_fingerprint(name: str) -> str:
    """What a user model's measurements depend on besides the settings: a hash of the source file of its
    function's module and of the shapes and dtypes of the model's parameters, buffers and batch, as its
    function builds them on the meta device. Editing the file (or the model its function returns) changes it,
    so a probe measures the edited model afresh instead of reusing the old model's records."""
    job = workloads.build(name, device="meta")
    digest = hashlib.sha1()
    source = getattr(sys.modules.get(name.partition(":")[0]), "__file__", None)
    if source and os.path.isfile(source):
        with open(source, "rb") as handle:
            digest.update(handle.read())
    shapes = [[n, list(t.shape), str(t.dtype)] for n, t in [*job.model.named_parameters(), *job.model.named_buffers()]]
    shapes.append([["batch", list(t.shape), str(t.dtype)] for t in job.batch])
    digest.update(json.dumps(shapes).encode())
    return digest.hexdigest()[:12]


def _check_worker(conn, name: str, path: list[str]) -> None:
    """In a worker: the model checked and fingerprinted, sent back as ("ok", fingerprint) or ("error", text).
    ``path``: the caller's sys.path now (the fork server's is the one it had when the server started)."""
    sys.path[:] = path
    try:
        workloads.check(name)
        conn.send(("ok", model_fingerprint(name)))
    except workloads.user.UserModelError as err:
        conn.send(("error", str(err)))
    except Exception as err:  # noqa: BLE001 - the user's code: any failure is reported with the path
        conn.send(("error", f"user model {name!r}: building it on the meta device raised {type(err).__name__}: "
                            f"{err}"))


def _checked_in_worker(context, name: str, timeout_s: float) -> str:
    parent_end, child_end = context.Pipe(duplex=False)
    process = context.Process(target=_check_worker, args=(child_end, name, list(sys.path)),
                              name=f"{WORKER_NAME}-check", daemon=True)
    process.start()
    child_end.close()
    try:
        if not parent_end.poll(timeout_s):
            raise ProfilerError(
                f"user model {name!r}: building it on the meta device took longer than timeout_s = {timeout_s:g} s "
                f"({'it exited with status ' + str(process.exitcode) if process.exitcode is not None else 'stopped'}"
                f"); expected its function to return (model, batch) within the timeout")
        status, text = parent_end.recv()
    except EOFError:
        process.join(5)
        raise ProfilerError(f"user model {name!r}: the worker building it on the meta device died "
                            f"(exit status {process.exitcode})") from None
    finally:
        if process.is_alive():
            process.kill()
        process.join(5)
        parent_end.close()
    if status != "ok":
        raise ProfilerError(text)
    return text


@dataclass(frozen=True)
class TopUp:
    """Extra rounds for the sets with fewer than two calm repeats (other processes used at most
    ``max_other_load_pct`` % of the cores), within ``budget_s`` seconds of new measurements.

    Skipped when fewer than ``min_calm_share`` of the planned measurements were calm: on a
    machine that is busy all the time, extra rounds would be disturbed too.
    """

    rounds: int = 0
    budget_s: float = 0.0
    max_other_load_pct: float = 10.0
    min_calm_share: float = 0.25


def run(measurements, log_path, settings: Settings = Settings(), progress: bool = True,
        top_up: TopUp = TopUp(), models: dict[str, str] | None = None) -> list[dict]:
    """Measure what the log lacks, appending each record at once; the planned records in plan order,
    then those of the extra rounds (see :class:`TopUp`).

    The log lacks a measurement when it has no record of its key that a rerun keeps
    (:func:`coloc.profiler.outcome.reusable`: not an error, not a timeout under a shorter
    ``timeout_s``). A torn last line, left by a crash while writing, is cut first
    (:func:`coloc.profiler.journal.recover`).

    Workers start from a fork server, which imports the caller's main module the way
    multiprocessing does: a script that calls this must do so under ``if __name__ == "__main__":``.
    """
    if mp.current_process().name.startswith(WORKER_NAME):
        raise ProfilerError("coloc.profiler.run was called while a worker process imported the main module: "
                            "call it under `if __name__ == \"__main__\":` in scripts")
    device = hardware.resolve(settings.device, settings.cpus)
    threads = settings.threads or len(device.cpus)
    users = sorted({w for m in measurements for w in m.workloads if workloads.user.is_path(w)} - set(models or {}))
    models = {**(models or {}), **check(users, settings.timeout_s, settings.omp_wait_policy)}
    with journal.locked(log_path), contextlib.ExitStack() as stack:
        done = {r["key"]: r for r in journal.recover(log_path) if outcome.reusable(r, settings.timeout_s)}
        opened: list = []

        def get(m: Measurement) -> tuple[dict, bool]:
            k = key(m, device, threads, settings, models)
            if k in done:
                return done[k], False
            if not opened:  # the first measurement this run makes: start MPS, the fork server, the sampler
                env = stack.enter_context(hardware.mps_daemon(settings.mps, device))
                opened.extend([_context(settings.omp_wait_policy), Sampler(_probes(device), settings.sample_interval_s),
                               env])
            done[k] = journal.append(log_path, measure(m, k, device, threads, settings, *opened))
            return done[k], True

        bar = tqdm(measurements, desc=f"profiling on {device.name}", disable=not progress, mininterval=2)
        records = [get(m)[0] for m in bar]
        return records + _top_up(measurements, records, get, top_up, settings.seed)


def _top_up(measurements, records: list[dict], get, policy: TopUp, seed: int) -> list[dict]:
    """The extra rounds: each measures, in a shuffled order, the sets still short of two calm repeats."""
    if policy.rounds < 1 or not records:
        return []
    calm_share = sum(_calm(r, policy.max_other_load_pct) for r in records) / len(records)
    if calm_share < policy.min_calm_share:
        warnings.warn(f"coloc.profiler: no extra rounds: only {calm_share:.0%} of the measurements were calm "
                      f"(other processes used more than {policy.max_other_load_pct:g}% of the cores)",
                      RuntimeWarning, stacklevel=3)
        return []
    sets = list(dict.fromkeys(m.workloads for m in measurements))
    first = max(m.repeat for m in measurements) + 1
    extra, spent = [], 0.0
    for repeat in range(first, first + policy.rounds):
        seen = records + extra
        calm = {s: sum(_calm(r, policy.max_other_load_pct) for r in seen if tuple(r["workloads"]) == s) for s in sets}
        shuffled = [sets[i] for i in np.random.default_rng([seed, repeat]).permutation(len(sets))]
        # sets without any calm repeat first: the tables need one of every set to leave disturbed ones out
        for workloads_ in sorted((s for s in shuffled if calm[s] < 2), key=calm.get):
            if spent >= policy.budget_s:
                return extra
            record, new = get(Measurement(workloads_, repeat))
            spent += (record.get("wall_s") or 0.0) if new else 0.0
            extra.append(record)
    return extra


def _calm(record: dict, max_other_load_pct: float) -> bool:
    """A successful measurement during which other processes used at most this share of the cores."""
    load = (record.get("device_metrics") or {}).get("other_cpu_pct")
    return outcome.of(record) == outcome.OK and (load is None or load <= max_other_load_pct)


def key(m: Measurement, device: hardware.Device, threads: int, settings: Settings,
        models: dict[str, str] | None = None) -> str:
    """The measurement's identity in the log: device, set, repeat and everything that changes a result,
    including the fingerprint (``models``, :func:`model_fingerprint`) of each user model in the set: the
    import path alone would keep the records of a model whose code has since changed.

    ``timeout_s`` is left out: it changes whether a measurement finishes, not what it measures
    (a logged timeout is remeasured under a longer one, see :func:`coloc.profiler.outcome.reusable`)."""
    faults = sorted((w, f) for w, f in settings.faults if w in m.workloads)
    fingerprints = {w: (models or {})[w] for w in m.workloads if workloads.user.is_path(w)}
    relevant = {"cpus": list(device.cpus), "threads": threads, "warmup_s": settings.warmup_s,
                "warmup_iters": settings.warmup_iters, "window_s": settings.window_s, "min_iters": settings.min_iters,
                "mps": settings.mps, "batch_size": settings.batch_size, "reduced": settings.reduced,
                "seed": settings.seed, "faults": faults, "omp_wait_policy": settings.omp_wait_policy}
    if fingerprints:  # zoo sets keep their keys (and the records logged under them)
        relevant["models"] = fingerprints
    digest = hashlib.sha1(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:12]
    return f"{device.name}|{'+'.join(m.workloads)}|r{m.repeat}|{digest}"


def _probes(device: hardware.Device) -> list:
    probes = [PsutilProbe(device.cpus)]
    if device.kind == "gpu":
        try:
            nvml, handle = open_nvml(int(device.torch_device.split(":")[1]))
            probes.append(NvmlProbe(nvml, handle))
        except ProfilerError as exc:
            warnings.warn(f"coloc.profiler: GPU metrics not sampled: {exc}", RuntimeWarning, stacklevel=3)
    return probes


def _context(omp_wait_policy: str | None):
    """The fork-server context; its server imports torch and the zoo once for every worker.

    OpenMP reads OMP_WAIT_POLICY when torch loads, so the server starts with it set. PASSIVE:
    a thread with nothing to do sleeps instead of spinning; with two jobs on the same cores,
    spinning threads burn the time the other job needs (here a pair of squeezenet-cifar10-b32
    ran at 0.2-0.9 it/s each spinning, 1.8 passive).
    """
    context = mp.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    saved = os.environ.get("OMP_WAIT_POLICY")
    if omp_wait_policy is not None:
        os.environ["OMP_WAIT_POLICY"] = omp_wait_policy
    try:
        forkserver.ensure_running()
    finally:
        if saved is None:
            os.environ.pop("OMP_WAIT_POLICY", None)
        else:
            os.environ["OMP_WAIT_POLICY"] = saved
    return context
