"""Exclusive-GPU baselines: FIFO (Kubernetes/Volcano slot default) and SJF (oracle durations)."""
from __future__ import annotations

from coloc.sim.job import Job
from reference_sim.base import Policy, place_exclusive, register


@register("fifo")
class Fifo(Policy):
    """First come, first served on whole GPUs.

    backfill=True lets a later job start when the head does not fit (the
    Kubernetes default scheduler tries every pending pod); False blocks.
    """

    def __init__(self, backfill: bool = True):
        self.backfill = backfill

    def schedule(self, view) -> None:
        queue, cluster = view.queue, view.cluster
        while queue:
            job = queue.best(cluster.max_free()) if self.backfill else queue.best()
            if job is None or not place_exclusive(view, job):
                return


@register("fifo-blocking")
class BlockingFifo(Fifo):
    """FIFO whose head blocks the queue (no backfill)."""

    def __init__(self):
        super().__init__(backfill=False)


@register("sjf")
class ShortestJobFirst(Fifo):
    """Shortest (exclusive duration) first, on whole GPUs. ORACLE baseline: knows durations."""

    kind = "oracle"

    def queue_key(self, job: Job) -> tuple:
        return (job.remaining, job.submit_time, job.job_id)
