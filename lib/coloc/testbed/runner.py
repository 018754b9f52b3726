"""The testbed runner: a trace of real training jobs on this machine's devices, placed by any registered policy.

The policy sees the simulator's `SchedulerView` (coloc.sim.view), built the same way (`SchedulerView.for_policy`):
the queue, the cluster (the testbed's devices as GPUs), its predictions, the profiled solo speeds and memory fit
(`Profile`) and, for a running job, the factor it achieves. The runner drives it as the simulator's engine
(coloc.sim.engine) does, with the real clock and real processes in place of the engine's events:

* at every arrival and completion while jobs wait, and at the policy's `period_s`, the policy decides a round;
* after the round, a job the view shows running without a process is launched (:mod:`coloc.testbed.process`,
  pinned to its device, from its iteration count); a job with a process that the view no longer runs there
  (preempted, migrated) is stopped: it writes a checkpoint and its count is kept for its restart;
* a job ends when its process reports its last iteration, at the time of that report.

What the view reports of a running job is what the runner measures, not the simulator's truth: a job alone on
its device runs at its profiled solo speed (factor 1, what the simulator assumes too), and a job sharing a
device at the factor measured from its step reports, (iterations / seconds) over its profiled solo throughput,
counted over `measure_steps` steps that ran wholly while its set of co-runners held (the step during which the
set changed, and a new process's first step, left out). Until its set has been measured the job runs in the view
at the factor this run last measured for the same job type next to the same co-runners, else at 1 / (jobs on
the device): a time-shared device's fair share, a stated prior, not a measurement. `coloc-online` reads these
factors (`observed_factor`) after its `observe_s`; a read of a prior is counted (`unmeasured_reads`). Whenever a
device's set changes, its jobs' remaining work in the view is set from their real iteration counts.

Everything is written as it happens to a journal (coloc.profiler.journal: one JSON line per record, fsynced):
launches (with when the process was ready and ended its first step), stops, finishes, and every segment of a job
on a device with its co-runners, iterations and measured throughput. A finished run's journal is read back
instead of running again; a run that was killed cannot be continued (its jobs' times would mix two runs'
clocks): `run` refuses it, naming the journal, unless `rerun_killed`, which moves it aside and starts afresh.
The runner never leaves a process behind: every process is killed by process group when the run ends or fails,
and one whose runner is killed kills itself (the profiler's lifeline and parent-death signal).
"""
from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import shutil
import time
from dataclasses import asdict, dataclass
from multiprocessing.connection import wait
from pathlib import Path

import pandas as pd

from coloc.profiler import journal
from coloc.profiler.worker import JobSpec
from coloc.sim.checks import SimulationError
from coloc.sim.cluster import ClusterSpec
from coloc.sim.engine import decide
from coloc.sim.job import DONE, QUEUED, RUNNING, Job
from coloc.sim.traces import jobs_from_trace
from coloc.sim.view import Profile, SchedulerView

from .devices import Device
from .process import Process, Run, checkpoint_path, start_server

TRACE_COLUMNS = ("job_id", "submit_time", "workload", "iterations", "duration", "num_gpus")


class TestbedError(RuntimeError):
    """A testbed run that cannot go on: a policy's refused action, a failed job process, a killed run's journal."""


@dataclass(frozen=True)
class Settings:
    """How the runner runs jobs and measures them."""

    max_jobs_per_gpu: int = 2        # the testbed's cap on jobs per device (each policy may ask for fewer)
    restart_cost_s: float = 1.0      # what the view charges a restart (the scheduler's estimate)
    measure_steps: int = 2           # steps a set runs wholly together before its factor is measured
    poll_s: float = 0.2              # longest wait for a report between two looks at the clock
    stop_timeout_s: float = 120.0    # a stopped job's last step and checkpoint must end within this
    omp_wait_policy: str | None = "PASSIVE"  # as the profiler's fork server (coloc.profiler.sweep._context)
    seed: int = 0                    # every job's model init and batches (the profiler's seed)
    reduced: bool = False            # the zoo's reduced inputs (tests only)
    batch_size: int | None = None    # override every job's batch (tests only)
    env: tuple[tuple[str, str], ...] = ()  # set in every job process before CUDA starts (the MPS daemon's pipes)


@dataclass
class Result:
    jobs: pd.DataFrame       # one row per job: times, where it ran, how it was treated
    segments: pd.DataFrame   # one row per stretch of a job on a device with one set of co-runners
    launches: pd.DataFrame   # one row per process: launch, ready, first step, how it ended
    stats: dict


class TestbedView(SchedulerView):
    """The simulator's view, whose observed factor of a job sharing a device is the one the runner measured: a
    read before the job's current set was measured (its factor still the prior) is counted in
    `stats["unmeasured_reads"]`."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.measured_jobs: set[int] = set()  # running jobs whose factor was measured in their current set
        self.stats["unmeasured_reads"] = 0

    def observed_factor(self, job: Job) -> float:
        if job.colocated and job.job_id not in self.measured_jobs:
            self.stats["unmeasured_reads"] += 1
        return job.factor


def check_trace(trace: pd.DataFrame) -> None:
    """ValueError naming the column or job when the trace is not a testbed trace."""
    missing = [c for c in TRACE_COLUMNS if c not in trace.columns]
    if missing:
        raise ValueError(f"testbed trace: missing columns {missing}; expected {list(TRACE_COLUMNS)}")
    for row in trace.itertuples(index=False):
        if not (float(row.iterations) >= 1 and float(row.iterations) == int(row.iterations)):
            raise ValueError(f"testbed trace: job {row.job_id} has iterations {row.iterations!r}; expected a whole "
                             f"number >= 1")
        if int(row.num_gpus) != 1:
            raise ValueError(f"testbed trace: job {row.job_id} asks for {row.num_gpus} devices; the testbed runs "
                             f"single-device jobs")


def fingerprint(trace: pd.DataFrame, policy_name: str, devices: list[Device], settings: Settings) -> str:
    """What defines a run: its trace, policy, devices and settings."""
    kept = {**asdict(settings), "env": sorted(k for k, _ in settings.env)}  # (the MPS pipes' folders change)
    text = json.dumps({"trace": trace[list(TRACE_COLUMNS)].astype(str).to_numpy().tolist(), "policy": policy_name,
                       "devices": [asdict(d) for d in devices], "settings": kept}, sort_keys=True)
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def run(trace: pd.DataFrame, policy, devices: list[Device], profile: Profile, predictions, journal_path,
        settings: Settings = Settings(), rerun_killed: bool = False) -> Result:
    """Run `trace` for real under `policy` on `devices` (see the module docstring); the finished run's tables.

    `profile`: the known facts (profiled solo throughput on the devices' type, memory fit); `predictions`: what
    the policy reads (coloc.sim.predictions), or None. `journal_path`: the run's journal (read back if the run
    finished before under the same definition)."""
    check_trace(trace)
    journal_path = Path(journal_path)
    key = fingerprint(trace, policy.name, devices, settings)
    with journal.locked(journal_path):
        records = journal.recover(journal_path)
        if records:
            finished = _finished(records, key)
            if finished is not None:
                return finished
            if not rerun_killed:
                raise TestbedError(_killed_message(journal_path, records, key))
            aside = journal_path.with_name(journal_path.name + ".killed")
            os.replace(journal_path, aside)
        return _Runner(trace, policy, devices, profile, predictions, journal_path, settings, key).run()


def _killed_message(path: Path, records: list[dict], key: str) -> str:
    start = next((r for r in records if r["key"] == "start"), {})
    if start.get("run") != key:
        return (f"{path}: holds a run of another definition (run {start.get('run')!r}, this one {key!r}); "
                "move it away or name another journal")
    done = sum(r["key"].startswith("finish:") for r in records)
    return (f"{path}: the run of policy {start.get('policy')!r} started {start.get('utc')} was killed after "
            f"{done} of {start.get('n_jobs')} jobs finished; a killed run cannot be continued (its jobs' times "
            "would mix two runs' clocks): rerun it afresh (rerun_killed=True, or the testbed script's default), "
            "which keeps the killed journal as <journal>.killed")


def _finished(records: list[dict], key: str) -> Result | None:
    end = next((r for r in records if r["key"] == "end"), None)
    if end is None or end.get("run") != key:
        return None
    frames = [pd.DataFrame(end[name], columns=end["columns"][name]) for name in ("jobs", "segments", "launches")]
    return Result(*frames, end["stats"])


class _Runner:
    def __init__(self, trace, policy, devices, profile, predictions, journal_path: Path, settings: Settings, key):
        names = sorted({d.name for d in devices})
        if len(names) != 1 or [d.index for d in devices] != list(range(len(devices))):
            raise ValueError(f"testbed devices {devices}: expected devices of one type indexed 0..{len(devices) - 1}")
        self.trace, self.policy, self.devices, self.settings, self.key = trace, policy, devices, settings, key
        self.journal = journal_path
        self.spec = ClusterSpec(((names[0], len(devices)),), gpus_per_node=len(devices),
                                max_jobs_per_gpu=settings.max_jobs_per_gpu)
        self.profile = profile
        self.jobs: dict[int, Job] = jobs_from_trace(trace, profile, self.spec)
        self.total = {int(r.job_id): int(r.iterations) for r in trace.itertuples(index=False)}
        self.count = dict.fromkeys(self.total, 0)  # iterations done (the latest report)
        self.view = TestbedView.for_policy(policy, self.spec, profile, predictions, settings.restart_cost_s)
        self.procs: dict[int, tuple[Process, float]] = {}  # job id -> (its process, the placement it runs)
        self.open: dict[int, dict] = {}  # job id -> its open segment
        self.measured: dict[tuple, float] = {}  # (workload, co-runners) -> the latest measured factor
        self.segments: list[dict] = []
        self.launches: list[dict] = []
        self.folder = journal_path.with_name(journal_path.stem + ".checkpoints")
        self.t0 = 0.0

    # ----- the loop ---------------------------------------------------------------------------
    def run(self) -> Result:
        view, policy = self.view, self.policy
        self.folder.mkdir(parents=True, exist_ok=True)
        self.context = start_server(self.settings.omp_wait_policy)
        arrivals = sorted(self.jobs.values(), key=lambda j: (j.submit_time, j.job_id))
        self._log("start", run=self.key, policy=policy.name, n_jobs=len(self.jobs),
                  utc=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  devices=[asdict(d) for d in self.devices], settings=asdict(self.settings))
        if hasattr(policy, "reset"):
            policy.reset(view)
        period = getattr(policy, "period_s", None)
        next_round = math.inf
        self.t0 = time.monotonic()
        try:
            while any(job.state != DONE for job in self.jobs.values()):
                view.now = now = self._clock()
                ended = self._read(now)
                for job in ended:
                    self._finish(job)
                arrived = 0
                while arrivals and arrivals[0].submit_time <= now:
                    job = arrivals.pop(0)
                    job.state, job.queued_since = QUEUED, job.submit_time
                    view.queue.push(job)
                    arrived += 1
                due = now >= next_round
                if ((ended or arrived) and view.queue) or due:
                    self._round()
                    next_round = now + period if period and (view.queue or view.running) else math.inf
                self._apply()
                self._refresh()
                if not arrivals and not view.running and view.queue:
                    waiting = [j.job_id for j in list(view.queue)[:5]]
                    raise TestbedError(f"t={now:.3f}: policy {policy.name} leaves {len(view.queue)} jobs queued on "
                                       f"idle devices with no arrivals left, e.g. {waiting}")
                self._wait(min(self.settings.poll_s, next_round - now,
                               (arrivals[0].submit_time - now) if arrivals else math.inf))
        except SimulationError as exc:
            self._log("refused", error=str(exc))
            raise TestbedError(f"policy {policy.name}: action refused: {exc}") from exc
        finally:
            for proc, _ in self.procs.values():
                proc.close()
            self.procs.clear()
            shutil.rmtree(self.folder, ignore_errors=True)  # the stopped jobs' checkpoints (a killed run's stay)
        stats = {**view.stats, "wall_s": self._clock()}
        result = Result(self._jobs_frame(), pd.DataFrame(self.segments), pd.DataFrame(self.launches), stats)
        self._log("end", run=self.key, jobs=result.jobs.to_dict("records"),
                  segments=result.segments.to_dict("records"), launches=result.launches.to_dict("records"),
                  stats=stats, columns={name: list(getattr(result, name).columns)
                                        for name in ("jobs", "segments", "launches")})
        return result

    def _clock(self) -> float:
        return time.monotonic() - self.t0

    def _round(self) -> None:
        decide(self.policy, self.view)

    def _wait(self, timeout: float) -> None:
        handles = [p.conn for p, _ in self.procs.values()] + [p.process.sentinel for p, _ in self.procs.values()]
        timeout = max(0.0, timeout)
        if handles:
            wait(handles, timeout=timeout)
        else:
            time.sleep(timeout)

    def _log(self, key: str, **fields) -> None:
        journal.append(self.journal, {"key": key, "t": round(self._clock(), 4) if self.t0 else 0.0, **fields})

    # ----- reports in, processes out --------------------------------------------------------------
    def _read(self, now: float) -> list[Job]:
        """Take every process's reports; the jobs that finished."""
        ended = []
        for job_id, (proc, _) in list(self.procs.items()):
            try:
                reports = proc.read()
            except RuntimeError as exc:
                raise TestbedError(f"policy {self.policy.name}: job {job_id}: {exc}") from exc
            for report in reports:
                if report["event"] in ("step", "finished"):
                    self.count[job_id] = report["n"]
                    self._measure(self.jobs[job_id], proc, report)
                row = self.launches[self._launch_row(job_id)]
                if report["event"] == "ready":
                    row["ready_s"] = report["t"] - self.t0
                elif report["event"] == "step" and math.isnan(row["first_step_s"]):
                    row["first_step_s"] = report["t"] - self.t0
            if proc.ended == "finished":
                ended.append(self.jobs[job_id])
        return ended

    def _launch_row(self, job_id: int) -> int:
        return max(i for i, row in enumerate(self.launches) if row["job_id"] == job_id)

    def _finish(self, job: Job) -> None:
        proc, _ = self.procs.pop(job.job_id)
        end = proc.t - self.t0
        proc.close()
        self._close_segment(job, end)
        view = self.view
        view._settle(job)
        job.remaining = 0.0
        view._stop(job)
        job.state, job.finish_time = DONE, end
        row = self.launches[self._launch_row(job.job_id)]
        row.update(ended="finished", end_s=end)
        self._log(f"finish:{job.job_id}", job=job.job_id, finish_s=end, iterations=self.count[job.job_id])

    def _apply(self) -> None:
        """Stop the processes of jobs the round took off their device; launch those of jobs it placed."""
        for job_id, (proc, placed) in list(self.procs.items()):
            job = self.jobs[job_id]
            if job.state == RUNNING and job.placed_at == placed:
                continue  # (a job preempted and placed again in one round was placed anew: it restarts)
            asked = self._clock()
            try:
                proc.stop(self.settings.stop_timeout_s)
            except RuntimeError as exc:
                raise TestbedError(f"policy {self.policy.name}: job {job_id}: {exc}") from exc
            del self.procs[job_id]
            self.count[job_id] = proc.n
            stopped = proc.t - self.t0
            self._close_segment(job, stopped)
            self.launches[self._launch_row(job_id)].update(ended="stopped", end_s=stopped, stop_asked_s=asked)
            self._log(f"stop:{job_id}:{len(self.launches)}", job=job_id, iterations=proc.n, asked_s=asked,
                      stopped_s=stopped)
        for job_id in sorted(self.view.running):
            if job_id not in self.procs:
                self._launch(self.view.running[job_id])

    def _launch(self, job: Job) -> None:
        device = self.devices[job.gpus[0]]
        s = self.settings
        spec = JobSpec(workload=job.workload, device=device.torch_device, threads=device.threads, cpus=device.cpus,
                       batch_size=s.batch_size, reduced=s.reduced, seed=s.seed, omp_wait_policy=s.omp_wait_policy,
                       env=s.env)
        start = self.count[job.job_id]
        proc = Process(self.context, Run(spec, start, self.total[job.job_id],
                                         checkpoint_path(self.folder, job.job_id)))
        self.procs[job.job_id] = (proc, job.placed_at)
        launched = proc.launched - self.t0
        self.launches.append({"job_id": job.job_id, "workload": job.workload, "device": device.index,
                              "from_iteration": start, "launch_s": launched, "ready_s": math.nan,
                              "first_step_s": math.nan, "end_s": math.nan, "stop_asked_s": math.nan, "ended": ""})
        self._log(f"launch:{job.job_id}:{len(self.launches)}", job=job.job_id, device=device.index,
                  from_iteration=start, pid=proc.process.pid, launch_s=launched)

    # ----- what the view shows of running jobs ----------------------------------------------------------
    def _refresh(self) -> None:
        """For the devices whose set changed: segments closed and opened, progress from the real counts, factors."""
        view = self.view
        dirty, view.dirty = view.dirty, set()
        if not dirty:
            return
        now = self._clock()
        residents = view.cluster.residents
        affected = sorted({job.job_id for gpu in dirty for job in residents[gpu]})
        if view.changed_jobs is not None:
            view.changed_jobs.update(affected)
        for job_id in affected:
            job = self.jobs[job_id]
            others = tuple(sorted(j.workload for j in residents[job.gpus[0]] if j is not job))
            self._close_segment(job, now)
            self.open[job_id] = {"job_id": job_id, "workload": job.workload, "device": job.gpus[0],
                                 "co_runners": others, "start_s": now, "n_start": self.count[job_id],
                                 "since": now, "ref": None, "measured_tput": math.nan}
            view._settle(job)
            view.measured_jobs.discard(job_id)
            job.remaining = (self.total[job_id] - self.count[job_id]) / self._ref_tput(job.workload)
            if not others:
                factor = 1.0
            else:
                factor = self.measured.get((job.workload, others), 1.0 / (1 + len(others)))
            job.crowded = len(others) >= 2
            self._set_factor(job, factor, shared=bool(others))

    def _set_factor(self, job: Job, factor: float, shared: bool) -> None:
        view = self.view
        view._settle(job)
        view.effective += job.num_gpus * (factor - job.factor)
        job.factor, job.colocated = factor, shared
        job.rate = job.speed * factor
        job.version += 1
        if view.changed_jobs is not None:
            view.changed_jobs.add(job.job_id)

    def _measure(self, job: Job, proc: Process, report: dict) -> None:
        """A step report: the job's measured factor once `measure_steps` steps ran wholly in its current set."""
        segment = self.open.get(job.job_id)
        if segment is None or report["event"] != "step":
            return
        t = report["t"] - self.t0
        if segment["ref"] is None:
            # the first step that ended after the set formed may have begun before it (or be a new process's first
        # step): its end is the reference point, the steps after it are counted
            if t > segment["since"]:
                segment["ref"] = (t, report["n"])
            return
        t_ref, n_ref = segment["ref"]
        steps = report["n"] - n_ref
        if steps < self.settings.measure_steps or t <= t_ref:
            return
        tput = steps / (t - t_ref)
        segment["measured_tput"] = tput
        factor = tput / self._solo_tput(job.workload)
        others = segment["co_runners"]
        if others:
            self.measured[(job.workload, others)] = factor
            if job.state == RUNNING:
                self._set_factor(job, factor, shared=True)
                self.view.measured_jobs.add(job.job_id)

    def _close_segment(self, job: Job, end: float) -> None:
        segment = self.open.pop(job.job_id, None)
        if segment is None:
            return
        iterations = self.count[job.job_id] - segment["n_start"]
        row = {k: v for k, v in segment.items() if k not in ("since", "ref")}
        row.update(co_runners="+".join(segment["co_runners"]), end_s=end, iterations=iterations,
                   solo_tput=self._solo_tput(job.workload))
        row["factor"] = row["measured_tput"] / row["solo_tput"]
        self.segments.append(row)
        self._log(f"segment:{job.job_id}:{len(self.segments)}", **row)

    def _solo_tput(self, workload: str) -> float:
        return self.profile.solo_throughput(self.spec.devices[0][0], workload)

    def _ref_tput(self, workload: str) -> float:
        return self.profile.solo_throughput(self.profile.reference_device, workload)

    def _jobs_frame(self) -> pd.DataFrame:
        jobs = sorted(self.jobs.values(), key=lambda j: j.job_id)
        frame = pd.DataFrame({
            "job_id": [j.job_id for j in jobs], "policy": self.policy.name, "workload": [j.workload for j in jobs],
            "iterations": [self.total[j.job_id] for j in jobs], "duration": [j.duration for j in jobs],
            "submit_time": [j.submit_time for j in jobs], "start_time": [j.start_time for j in jobs],
            "finish_time": [j.finish_time for j in jobs], "queue_delay": [j.queued_time for j in jobs],
            "run_time": [j.run_time for j in jobs], "colocated_time": [j.colocated_time for j in jobs],
            "crowded_time": [j.crowded_time for j in jobs], "preemptions": [j.preemptions for j in jobs],
            "migrations": [j.migrations for j in jobs]})
        frame["jct"] = frame["finish_time"] - frame["submit_time"]
        return frame


def profile_of(solo: pd.DataFrame, pairs: pd.DataFrame, device: str) -> Profile:
    """The known facts of a testbed whose devices are `device`: profiled solo throughputs there (the reference
    device), memory fit of every measured pair, declared memory where the solo table measured it."""
    from coloc.sim.interference import GroundTruth

    return Profile.of(GroundTruth(solo, pairs, device, name="profiled on the testbed's device"))


def summary(jobs: pd.DataFrame) -> dict:
    """Mean JCT and makespan of a run's jobs table (real or simulated)."""
    return {"jct_mean": float(jobs["jct"].mean()),
            "makespan": float(jobs["finish_time"].max() - jobs["submit_time"].min()),
            "n_jobs": int(len(jobs))}


__all__ = ["Result", "Settings", "TestbedError", "check_trace", "fingerprint", "profile_of", "run", "summary"]
