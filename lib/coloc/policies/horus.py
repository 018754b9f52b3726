"""Horus: place by a cost on predicted GPU utilization, with look-ahead.

cost(job, GPU) = |U + u - 1| x (over_weight if U + u > 1 else 1) + count_weight x n
where U is the summed predicted utilization of the n jobs on the GPU and u
the job's predicted utilization. Among the first `lookahead` queued jobs the
(job, GPU) pair of lowest cost is placed, repeatedly, at most
`max_jobs_per_gpu` jobs per GPU (never above the cluster's cap). Horus's
memory term and 500 MB head-room become a hard rule here: a set is allowed
only if Gavel measured it as fitting in memory (no per-job memory numbers).
"""
from __future__ import annotations

from coloc.policies.base import Policy, register


@register("horus")
class Horus(Policy):
    kind = "predictive"
    needs = ("util",)

    def __init__(self, lookahead: int = 5, max_jobs_per_gpu: int = 3,
                 over_weight: float = 2.0, count_weight: float = 0.1):
        self.lookahead = lookahead
        self.max_jobs_per_gpu = max_jobs_per_gpu
        self.over_weight = over_weight
        self.count_weight = count_weight

    def reset(self, view) -> None:
        super().reset(view)
        self._util = view.predictions.util
        self._cap = view.cluster.cap  # (capped at max_jobs_per_gpu by the view)
        self._costs: dict[tuple, float | None] = {}

    def _joining_cost(self, view, device: str, workload: str, u: float, sig) -> float | None:
        """cost of a `workload` job (utilization u) joining a GPU holding `sig`; None if not allowed. Cached."""
        key = (device, workload, sig)
        if key not in self._costs:
            allowed = len(sig) < self._cap and view.can_share(device, sig + (workload,))
            total = u + sum(self._util(device, w) for w in sig)
            self._costs[key] = self.cost(total, len(sig)) if allowed else None
        return self._costs[key]

    def cost(self, total_util: float, n_jobs: int) -> float:
        gap = total_util - 1.0
        return (self.over_weight * gap if gap > 0 else -gap) + self.count_weight * n_jobs

    def schedule(self, view) -> None:
        while True:
            best = None
            for position, job in enumerate(view.queue.first(self.lookahead)):
                option = self._best_gpu(view, job, position)
                if option is not None and (best is None or option[:2] < best[:2]):
                    best = option
            if best is None:
                return
            _, _, job, gpus = best
            view.place(job, gpus)

    def _best_gpu(self, view, job, position: int):
        """(cost, tie-break, job, gpus) of the cheapest placement of `job`, or None."""
        cluster, best = view.cluster, None
        for device in cluster.devices:
            if not view.has_solo(device, job.workload):
                continue
            u = self._util(device, job.workload)
            if cluster.free_count[device] >= job.num_gpus:
                option = (self.cost(u, 0), (position, 0), job, None, device)
                best = option if best is None or option[:2] < best[:2] else best
            if not job.shareable:
                continue
            for sig, gpus in cluster.shareable_groups(device):
                cost = self._joining_cost(view, device, job.workload, u, sig)
                if cost is None:
                    continue
                gpu = gpus.first()
                option = (cost, (position, 1, gpu), job, (gpu,), device)
                best = option if best is None or option[:2] < best[:2] else best
        if best is None:
            return None
        cost, tie, job, gpus, device = best
        return cost, tie, job, gpus or cluster.pick_free(device, job.num_gpus)
