"""Volcano with GPU memory sharing: the baseline ISACPP compares itself with, blind to interference.

Kubernetes/Volcano with GPU sharing on places a pod that requests GPU memory on the first GPU (lowest index)
whose free memory covers the request (Volcano's gpu-share predicate); the queue is first come, first served,
and a job that fits nowhere is passed over (the next one is tried). Nothing about how jobs slow each other
down enters: a GPU is filled while memory lasts, so GPU 0 takes the next job while it fits even when GPU 1 is
idle.

Here a GPU's free memory is its device's memory (coloc.devices) less the declared peak memory of the jobs on
it (`view.memory`: measured solo where the data has it, else estimated from the model graph), and a set must
also fit by the world's rule (`view.can_share`: every pair of it measured as fitting). Where a job type's
memory is unknown, that rule alone decides. A job of several GPUs takes whole idle GPUs (Volcano shares one
GPU per pod), on as few nodes as possible. The cluster's cap on jobs per GPU is the only other limit.
"""
from __future__ import annotations

from coloc.policies.base import Policy, first_come_with_skipping, register, whole_idle_gpus


@register("volcano")
class Volcano(Policy):
    kind = "baseline"

    def reset(self, view) -> None:
        super().reset(view)
        self._fit: dict[tuple[str, tuple[str, ...]], bool] = {}

    def schedule(self, view) -> None:
        first_come_with_skipping(view, self._first_fit)

    def _first_fit(self, view, job) -> tuple[int, ...] | None:
        """The lowest-index GPU whose free memory takes `job` (whole idle GPUs for a job of several); None."""
        cluster = view.cluster
        if job.num_gpus > 1 or not job.shareable:
            return whole_idle_gpus(view, job)
        best = None
        for device in cluster.devices:
            if not view.has_solo(device, job.workload):
                continue
            idle = cluster.first_free(device)
            if idle is not None and (best is None or idle < best) and self._fits(view, device, (), job.workload):
                best = idle
            for sig, gpus in cluster.shareable_groups(device):
                first = gpus.first()
                if (best is None or first < best) and self._fits(view, device, sig, job.workload):
                    best = first
        return None if best is None else (best,)

    def _fits(self, view, device: str, sig: tuple[str, ...], workload: str) -> bool:
        """Whether a `workload` job fits next to the jobs `sig` on a GPU of `device` (memory, then the world's rule)."""
        key = (device, sig + (workload,))
        fit = self._fit.get(key)
        if fit is None:
            fit = self._fit[key] = memory_fits(view, device, sig, workload) and (
                not sig or view.can_share(device, sig + (workload,)))
        return fit


def memory_fits(view, device: str, sig: tuple[str, ...], workload: str, headroom: float = 0.0) -> bool:
    """Whether the declared memory of the jobs `sig` and a new `workload` job fits one GPU of `device` with more
    than `headroom` bytes left free (strictly: headroom 0 asks only that the sum not exceed the memory). True where
    a job's or the device's memory is unknown (the caller's other rules decide)."""
    capacity = view.device_memory(device)
    needs = [view.memory(device, w) for w in (*sig, workload)]
    if capacity is None or any(n is None for n in needs):
        return True
    left = capacity - sum(needs)
    return left > headroom if headroom > 0 else left >= 0
