"""What a policy sees and does: the scheduler's view of one simulation.

A real scheduler knows the queue, the cluster and what runs where, the predictions it is given,
each job type's profiled solo speed on each device type, whether a set of jobs fits in one GPU's
memory (from the jobs' declared memory) and, after the fact, the speed a running job achieves. It
does not know how fast a set of jobs will run together: that is the measured pair table, the
experiment's ground truth, which only the Simulator (coloc.sim.engine) holds. The view owns the
scheduling state and the three actions (`place`, `preempt`, `migrate`, each checked); it holds
copies of the known facts (`Profile`) and no reference that leads to the Simulator or the truth.
The Simulator sets the co-location rates of jobs after each round, on the GPUs in `dirty`.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import replace

from coloc.sim.checks import MAX_TIME_S, SimulationError
from coloc.sim.cluster import Cluster, ClusterSpec
from coloc.sim.job import QUEUED, RUNNING, Job
from coloc.sim.predictions import Predictions
from coloc.sim.queue import JobQueue


def _gpu_index(gpu, job: Job, now: float) -> int:
    """A GPU index a policy gave, as an int: only integers (numpy's too), never a bool, a float or a string."""
    if isinstance(gpu, bool) or not isinstance(gpu, numbers.Integral):
        raise SimulationError(f"t={now}: job {job.job_id} placed on GPU {gpu!r} ({type(gpu).__name__}); expected "
                              f"an integer GPU index")
    return int(gpu)


class Profile:
    """Known facts about job types: solo throughput per device (profiled alone), memory fit of pairs and, where
    known, each job type's peak GPU memory (the memory request a job declares), each device's memory and Lucid's
    packing class of the job type (from its solo profile)."""

    def __init__(self, solo_tput: dict[tuple[str, str], float], fits: dict[tuple[str, str, str], bool],
                 reference_device: str, memory: dict[tuple[str, str], float] | None = None,
                 memory_source: str = "none", labels: dict[tuple[str, str], int] | None = None):
        self._tput = dict(solo_tput)
        self._fits = dict(fits)
        self.reference_device = reference_device
        self._speeds: dict[tuple[str, str], float] = {}
        self._memory = dict(memory or {})
        self.memory_source = memory_source if self._memory else "none"
        self._device_memory: dict[str, float | None] = {}
        self._labels = dict(labels or {})

    @classmethod
    def of(cls, truth) -> "Profile":
        """Copies of a GroundTruth's solo throughputs, memory fit, memory requests and packing labels (not its
        co-location numbers)."""
        return cls(truth.solo_throughputs(), truth.memory_fit(), truth.reference_device, truth.memory_requests(),
                   truth.memory_source, truth.packing_labels())

    def memory(self, device: str, workload: str) -> float | None:
        """Peak GPU memory (bytes) of a `workload` job on `device`, as the job declares it; None if unknown."""
        return self._memory.get((device, workload))

    def packing_label(self, device: str, workload: str) -> int | None:
        """Lucid's packing class (0, 1 or 2) of `workload` on `device`, from its solo profile; None if unknown."""
        return self._labels.get((device, workload))

    def device_memory(self, device: str) -> float | None:
        """Memory (bytes) of one GPU of `device` (coloc.devices); None for a device the table lacks."""
        if device not in self._device_memory:
            from coloc.devices import canonical_gpu, device_row
            name = canonical_gpu(device)
            self._device_memory[device] = float(device_row(name)["memory_bytes"]) if name else None
        return self._device_memory[device]

    def has_solo(self, device: str, workload: str) -> bool:
        """Whether `workload` runs on `device` (it has a profiled solo throughput there)."""
        return (device, workload) in self._tput

    def speed(self, device: str, workload: str) -> float:
        """Solo speed on `device` relative to the reference device (1.0 there)."""
        speed = self._speeds.get((device, workload))
        if speed is not None:
            return speed
        try:
            speed = self._speeds[(device, workload)] = (self._tput[(device, workload)] /
                                                        self._tput[(self.reference_device, workload)])
            return speed
        except KeyError:
            raise KeyError(f"profile: no solo throughput of {workload!r} on {device!r} and "
                           f"{self.reference_device!r}") from None

    def fits(self, device: str, workloads: Sequence[str]) -> bool:
        """Whether these workloads fit on one GPU of `device` together (every pair fits; unknown pairs do not)."""
        n = len(workloads)
        return all(self._fits.get((device, workloads[i], workloads[k]), False)
                   for i in range(n) for k in range(i + 1, n))


def jobs_per_gpu(policy, cluster_cap: int | None) -> int | None:
    """Jobs one GPU may hold in a run of `policy` on a cluster whose cap is `cluster_cap` (the most any policy
    may use; None: no cap but memory): 1 for a policy that never shares, else the least of its own
    `max_jobs_per_gpu` and the cap, None where neither sets one (memory alone decides)."""
    if not getattr(policy, "shares_gpus", True):
        return 1
    own = getattr(policy, "max_jobs_per_gpu", None)
    if own is None:
        return cluster_cap
    return max(1, int(own) if cluster_cap is None else min(int(own), cluster_cap))


class SchedulerView:
    """The queue, the cluster, running jobs, the time, predictions, known facts and the actions."""

    def __init__(self, spec: ClusterSpec, profile: Profile, predictions: Predictions | None,
                 queue_key: Callable[[Job], tuple], restart_cost_s: float = 0.0, sharing: bool = True):
        self.spec = spec
        self.cluster = Cluster(spec, sharing)  # sharing=False: one job per GPU (a policy that never co-locates)

        self.profile = profile
        self.predictions = predictions
        self.queue = JobQueue(queue_key)
        self.running: dict[int, Job] = {}
        self.now = 0.0
        if isinstance(restart_cost_s, bool) or not isinstance(restart_cost_s, numbers.Real) or not (
                0.0 <= float(restart_cost_s) <= MAX_TIME_S):
            raise ValueError(f"restart_cost_s {restart_cost_s!r}: expected seconds of solo progress in "
                             f"[0, {MAX_TIME_S:g}]")
        self.restart_cost_s = float(restart_cost_s)
        self.effective = 0.0          # sum over running jobs of num_gpus x factor
        self.dirty: set[int] = set()  # GPUs whose jobs changed since the Simulator last set rates
        # a policy that sets changed_jobs to a set gets there the id of every job placed, stopped, probed, sharing
        # a GPU with one of those, or whose rate the Simulator looked at again (its progress state may have changed)
        self.changed_jobs: set[int] | None = None
        self.stats = {"events": 0, "rounds": 0, "decision_time_s": 0.0, "preemptions": 0,
                      "migrations": 0, "placements": 0, "probe_gpu_s": 0.0}
        self._share_cache: dict = {}

    @classmethod
    def for_policy(cls, policy, spec: ClusterSpec, profile: Profile, predictions: Predictions | None,
                   restart_cost_s: float = 0.0) -> "SchedulerView":
        """The view of a run of `policy`: its queue order, and a cluster capped at what the policy may put on a
        GPU (jobs_per_gpu; no sharing index at all for a policy that never shares)."""
        sharing = getattr(policy, "shares_gpus", True)
        cap = jobs_per_gpu(policy, spec.max_jobs_per_gpu)
        if sharing and cap != spec.max_jobs_per_gpu:
            spec = replace(spec, max_jobs_per_gpu=cap)
        return cls(spec, profile, predictions, policy.queue_key, restart_cost_s, sharing=sharing)

    # ----- what a scheduler knows ---------------------------------------------------
    def can_share(self, device: str, workloads) -> bool:
        """Whether these workloads fit on one GPU together (memory; known to every policy)."""
        key = (device, tuple(sorted(workloads)))
        value = self._share_cache.get(key)
        if value is None:
            value = self._share_cache[key] = self.profile.fits(device, key[1])
        return value

    def has_solo(self, device: str, workload: str) -> bool:
        """Whether `workload` runs on `device` (profiled alone there)."""
        return self.profile.has_solo(device, workload)

    def memory(self, device: str, workload: str) -> float | None:
        """A `workload` job's declared peak GPU memory on `device` (bytes; None if unknown)."""
        return self.profile.memory(device, workload)

    def packing_label(self, device: str, workload: str) -> int | None:
        """Lucid's packing class (0 light, 1 medium, 2 heavy) of `workload` on `device`, made from its solo profile
        (the solo table's `lucid_label`); None where the data has none."""
        return self.profile.packing_label(device, workload)

    def device_memory(self, device: str) -> float | None:
        """One GPU's memory on `device` (bytes; None if unknown)."""
        return self.profile.device_memory(device)

    def speed(self, device: str, workload: str) -> float:
        """Profiled solo speed of `workload` on `device`, relative to the reference device."""
        return self.profile.speed(device, workload)

    def observed_factor(self, job: Job) -> float:
        """The co-location factor the job is achieving now (what a running system can measure)."""
        return job.factor

    # ----- actions ----------------------------------------------------------------------
    def place(self, job: Job, gpus) -> None:
        """Start (or restart) a queued job on `gpus`."""
        gpus = tuple(gpu if type(gpu) is int else _gpu_index(gpu, job, self.now) for gpu in gpus)
        if job.state != QUEUED or job not in self.queue:
            raise SimulationError(f"t={self.now}: job {job.job_id} placed while {job.state}")
        if not gpus or min(gpus) < 0 or max(gpus) >= self.cluster.num_gpus:
            raise SimulationError(f"t={self.now}: job {job.job_id} placed on invalid GPUs {gpus}")
        device = self.cluster.gpu_device[gpus[0]]
        if not self.profile.has_solo(device, job.workload):
            raise SimulationError(f"t={self.now}: job {job.job_id} ({job.workload}) has no solo "
                                  f"throughput on {device}")
        residents = self.cluster.residents
        for gpu in gpus:
            others = [j.workload for j in residents[gpu]] if residents[gpu] else None
            if others and not self.profile.fits(device, others + [job.workload]):
                raise SimulationError(f"t={self.now}: job {job.job_id} ({job.workload}) on GPU {gpu} "
                                      f"with {others}: infeasible on {device}")
        self.cluster.add(job, gpus)
        self.queue.remove(job)
        job.state, job.gpus, job.device = RUNNING, gpus, device
        job.speed = self.profile.speed(device, job.workload)
        job.queued_time += self.now - job.queued_since
        job.last_update = self.now
        job.placed_at = self.now
        if math.isnan(job.start_time):
            job.start_time = self.now
        if job.restart_due:
            extra = self.restart_cost_s * job.speed
            job.overhead += extra
            job.remaining += extra
            job.restart_due = False
        self.running[job.job_id] = job
        self.dirty.update(gpus)
        self.stats["placements"] += 1
        self._log_change(job)

    def preempt(self, job: Job) -> None:
        """Stop a running job and put it back in the queue (it pays the restart cost later)."""
        if job.state != RUNNING:
            raise SimulationError(f"t={self.now}: job {job.job_id} preempted while {job.state}")
        self._stop(job)
        job.state = QUEUED
        job.queued_since = self.now
        job.restart_due = self.restart_cost_s > 0
        job.preemptions += 1
        self.stats["preemptions"] += 1
        self.queue.push(job)

    def migrate(self, job: Job, gpus) -> None:
        """Move a running job to other GPUs (a preemption and an immediate restart)."""
        self.preempt(job)
        job.preemptions -= 1
        job.migrations += 1
        self.stats["preemptions"] -= 1
        self.stats["migrations"] += 1
        self.place(job, gpus)

    def probe(self, job: Job, seconds: float) -> None:
        """Charge `seconds` of profiling (the job's probe runs) to a job placed in this round.

        The probes run on the job's GPUs before its training: its run grows by `seconds` of solo
        time (counted as overhead, as a restart's cost is), so its GPUs are busy that much longer.
        Only a job placed in this round, before the Simulator has set its rate, can be charged.
        """
        if job.state != RUNNING or job.placed_at != self.now or job.rate != 0.0:
            raise SimulationError(f"t={self.now}: job {job.job_id} probed while {job.state}, placed at "
                                  f"{job.placed_at}; expected a job placed in this round")
        if not (seconds >= 0 and math.isfinite(seconds)):
            raise SimulationError(f"t={self.now}: job {job.job_id} probed for {seconds} s; expected >= 0")
        extra = seconds * job.speed
        job.overhead += extra
        job.remaining += extra
        self.stats["probe_gpu_s"] += seconds * job.num_gpus
        self._log_change(job)

    # ----- bookkeeping shared with the Simulator ------------------------------------------
    def _stop(self, job: Job) -> None:
        """Take a running job off its GPUs (its progress settled up to now)."""
        self._settle(job)
        self.cluster.remove(job)
        self.dirty.update(job.gpus)
        self.effective -= job.num_gpus * job.factor
        job.rate = job.factor = 0.0
        job.colocated = job.crowded = False
        job.version += 1
        del self.running[job.job_id]
        self._log_change(job)

    def _log_change(self, job: Job) -> None:
        """Log `job` and the jobs on its GPUs (their co-runners changed) for a policy that keeps changed_jobs."""
        changed = self.changed_jobs
        if changed is not None:
            changed.add(job.job_id)
            residents = self.cluster.residents
            for gpu in job.gpus:
                for other in residents[gpu]:
                    changed.add(other.job_id)

    def _settle(self, job: Job) -> None:
        """Account a job's progress and times from its last update to now."""
        dt = self.now - job.last_update
        if dt > 0:
            progress = job.rate * dt
            job.remaining -= progress
            job.done_work += progress
            job.run_time += dt
            job.attained += dt * job.num_gpus
            if job.colocated:
                job.colocated_time += dt
                if job.crowded:
                    job.crowded_time += dt
        job.last_update = self.now
