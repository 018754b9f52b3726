"""Exclusive-GPU baselines: FIFO (Kubernetes/Volcano slot default) and SJF (known durations)."""
from __future__ import annotations

from coloc.policies.base import Policy, place_exclusive, register
from coloc.sim.job import Job


@register("fifo")
@register("fifo-blocking", backfill=False)
class Fifo(Policy):
    """First come, first served on whole GPUs.

    backfill=True lets a later job start when the head does not fit (the Kubernetes default scheduler tries every
    pending pod). False, the preset ``fifo-blocking``, is the FIFO baseline of the Horus authors' simulator: its
    ``schedule_fifo`` tries only the head of the queue, and when the head fits nowhere nothing starts.
    """

    shares_gpus = False
    parameters = {"backfill": bool}

    def __init__(self, backfill: bool = True):
        self.backfill = backfill

    def schedule(self, view) -> None:
        queue, cluster = view.queue, view.cluster
        while queue:
            job = queue.best(cluster.max_free()) if self.backfill else queue.best()
            if job is None or not place_exclusive(view, job):
                return


@register("sjf")
class ShortestJobFirst(Fifo):
    """Shortest (exclusive duration) first, on whole GPUs. Knows the jobs' durations, the knowledge coloc's and
    ISACPP's remaining times assume too, and never the co-location truth: a baseline, not an upper bound."""

    kind = "baseline"

    def queue_key(self, job: Job) -> tuple:
        return (job.remaining, job.submit_time, job.job_id)
