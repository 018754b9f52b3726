"""volcano and volcano-firstfit, plainly: every GPU of the cluster is asked whether it takes the job.

The decision rules of coloc.policies.volcano without its search: every queued job in queue order (past the later jobs
of a job type and GPU count that fitted nowhere this round: room only shrinks within a round); a job of several
GPUs (or one that may not share) takes whole idle GPUs of the first device type that runs it and has enough; a
single-GPU job goes, for volcano-firstfit, to the lowest-index GPU that takes it, and for volcano, to the
lowest-index GPU that takes it on a node drawn uniformly among the nodes holding such a GPU (the draw made as the
fast path makes it: with at most SCAN_BELOW such GPUs, the drawn index into those nodes in order; with more, nodes
of the job's device types drawn until one holds such a GPU).
"""
from __future__ import annotations

from reference_sim.base import Policy, register

SCAN_BELOW = 64  # at most this many GPUs take the job: list their nodes (else draw nodes until one takes it)
MASK = (1 << 64) - 1


def draw(job_id: int, i: int) -> int:
    """The i-th number of job `job_id`'s pseudo-random stream (splitmix64 of the two), in [0, 2^64)."""
    z = (int(job_id) * 0x9E3779B97F4A7C15 + (i + 1) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


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


class _MemoryShare(Policy):
    kind = "baseline"

    def schedule(self, view) -> None:
        cluster = view.cluster
        failed = set()  # (workload, GPUs) of a job that fitted nowhere: a later one fits nowhere either this round
        for job in list(view.queue.ordered()):
            if (job.workload, job.num_gpus) in failed:
                continue
            if cluster.max_free() == 0 and not cluster.any_shareable():
                return
            if job.num_gpus > 1 or not job.shareable:
                gpus = self._whole_idle(view, job)
            else:
                taking = [gpu for gpu in range(cluster.num_gpus) if self._takes(view, gpu, job.workload)]
                gpus = (self._pick(view, job, taking),) if taking else None
            if gpus is None:
                failed.add((job.workload, job.num_gpus))
            else:
                view.place(job, gpus)

    @staticmethod
    def _whole_idle(view, job):
        for device in view.cluster.devices:
            if view.has_solo(device, job.workload):
                gpus = view.cluster.pick_free(device, job.num_gpus)
                if gpus is not None:
                    return gpus
        return None

    @staticmethod
    def _takes(view, gpu: int, workload: str) -> bool:
        cluster = view.cluster
        device, here = cluster.gpu_device[gpu], cluster.residents[gpu]
        if not view.has_solo(device, workload):
            return False
        if not here:
            return memory_fits(view, device, (), workload)
        if len(here) >= cluster.cap or not all(j.shareable for j in here):
            return False
        sig = tuple(sorted(j.workload for j in here))
        return memory_fits(view, device, sig, workload) and view.can_share(device, sig + (workload,))


@register("volcano-firstfit")
class VolcanoFirstFit(_MemoryShare):
    def _pick(self, view, job, taking: list[int]) -> int:
        return min(taking)


@register("volcano")
class Volcano(_MemoryShare):
    def _pick(self, view, job, taking: list[int]) -> int:
        cluster = view.cluster
        nodes = sorted({cluster.gpu_node[gpu] for gpu in taking})
        if len(taking) <= SCAN_BELOW:
            node = nodes[draw(job.job_id, 0) % len(nodes)]
        else:
            eligible = [n for n, device in enumerate(cluster.node_device) if view.has_solo(device, job.workload)]
            i = 1
            node = eligible[draw(job.job_id, i) % len(eligible)]
            while node not in nodes:
                i += 1
                node = eligible[draw(job.job_id, i) % len(eligible)]
        return min(gpu for gpu in taking if cluster.gpu_node[gpu] == node)
