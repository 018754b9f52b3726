"""A job's state inside the simulator."""
from __future__ import annotations

PENDING, QUEUED, RUNNING, DONE = "pending", "queued", "running", "done"


class Job:
    """One trace job; `work` is in reference seconds (exclusive run time on the reference device)."""

    __slots__ = ("job_id", "submit_time", "duration", "num_gpus", "workload", "state",
                 "work", "overhead", "remaining", "done_work", "rate", "speed", "factor",
                 "last_update", "version", "gpus", "device", "start_time", "finish_time",
                 "run_time", "colocated_time", "queued_time", "queued_since", "attained",
                 "preemptions", "migrations", "placed_at", "shareable", "colocated", "restart_due",
                 "crowded", "crowded_time")

    def __init__(self, job_id: int, submit_time: float, duration: float, num_gpus: int, workload: str):
        self.job_id = job_id
        self.submit_time = submit_time
        self.duration = duration
        self.num_gpus = num_gpus
        self.workload = workload
        self.state = PENDING
        self.work = duration
        self.overhead = 0.0          # restart work charged by preemptions and migrations
        self.remaining = duration    # work left, at time last_update
        self.done_work = 0.0         # integral of rate, kept apart for the conservation check
        self.rate = 0.0              # reference seconds of work per second = speed * factor
        self.speed = 0.0             # solo speed on the current device, relative to reference
        self.factor = 0.0            # co-location factor while running (1.0 alone), 0 otherwise
        self.last_update = submit_time
        self.version = 0             # invalidates stale completion events
        self.gpus: tuple[int, ...] = ()
        self.device = ""
        self.start_time = float("nan")
        self.finish_time = float("nan")
        self.run_time = 0.0          # seconds on GPUs
        self.colocated_time = 0.0    # seconds on GPUs shared with another job
        self.queued_time = 0.0       # seconds waiting in the queue (all waits)
        self.queued_since = submit_time
        self.attained = 0.0          # GPU-seconds of service (Tiresias)
        self.preemptions = 0
        self.migrations = 0
        self.placed_at = float("nan")  # time of the latest placement
        self.shareable = False       # may share a GPU (set by the engine)
        self.colocated = False       # shares a GPU with another job right now
        self.restart_due = False     # was preempted: next placement pays the restart cost
        self.crowded = False         # shares a GPU with two or more jobs right now (truth: product of pairs)
        self.crowded_time = 0.0      # seconds in such sets: where the simulator's truth is an extrapolation

    def remaining_at(self, now: float) -> float:
        """Work left at `now`, in reference seconds."""
        if self.state == RUNNING:
            return self.remaining - self.rate * (now - self.last_update)
        return self.remaining

    def __repr__(self) -> str:
        return (f"Job({self.job_id}, {self.workload}, gpus={self.num_gpus}, state={self.state}, "
                f"remaining={self.remaining:.6g})")
