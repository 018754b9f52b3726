"""Horus (Yeung et al., TPDS 2022) as its authors' simulator builds it (matthewygf/GPUSchedule).

Cost of a job j joining a GPU of device type d that holds the jobs R (n = |R| of them):

    cost = 1.3 x (M + m) / D  +  |min(U, 1) + u - 1| x (1.6 if min(U, 1) + u > 1 else 1)  +  n

M: the summed declared peak memory of R (`view.memory`), m: j's, D: the GPU's memory (`view.device_memory`); a job
or device whose memory is unknown adds 0 to the memory term. U: the summed predicted solo utilization of R on d,
capped at 1 as the reference caps a GPU's utilization at 100%; u: j's predicted utilization on d. With the count
weighted 1, an idle GPU (n = 0) costs at most 1.3 m / D + 1 (u <= 1) and an occupied one at least 1.3 m / D + 1:
an idle GPU that fits never costs more.

A GPU fits j when j has a solo throughput on d and either the GPU is idle, or it holds fewer than
`max_jobs_per_gpu` (3) jobs, all of them and j shareable, whose declared memory with j's leaves more than
`headroom_bytes` (500 MiB) free (`volcano.memory_fits`) and which the world lets share (`view.can_share`: every
pair measured as fitting). An idle GPU takes any job measured running alone there (the headroom rule is not
applied to a job alone: its measured solo run says it fits). The cluster's cap on jobs per GPU also holds.

Queue: ordered by predicted utilization on the reference device (least first; ties by submission, then job id),
a min-heap in the reference. Each pass looks at the first `lookahead` (5) jobs in that order and places the first
that fits somewhere, one job per pass; passes repeat within a round until none of the first five fits.

Placement of a single-GPU job: the node whose lowest-cost fitting GPU is least (ties: the lowest node), then
the first GPU of that node, in GPU order, that fits (not necessarily the cheapest one there). A job of several
GPUs takes idle GPUs of the device type whose idle cost is least (ties: the cluster's device order), on as few
nodes as possible (Cluster.pick_free), as the reference keeps the placement plan that uses fewest nodes.

Fast path: every GPU of a shareable group (one resident set) and every idle GPU of a device type costs the same,
so the least cost over the groups and the idle class of each device type gives the node (a group's lowest GPU is
on its lowest node; the lowest node with an idle GPU comes from the cluster's nodes-by-idle-count index), and only
that node's GPUs are scanned. Costs and fits are cached per (device, resident set, job type).
"""
from __future__ import annotations

from coloc.policies.base import Policy, register
from coloc.policies.volcano import memory_fits

HEADROOM_BYTES = 500 * 2 ** 20
_UNKNOWN = object()


def horus_cost(memory_used: float, memory_job: float, device_memory: float | None, util_used: float,
               util_job: float, n_jobs: int, memory_weight: float = 1.3, over_weight: float = 1.6,
               count_weight: float = 1.0) -> float:
    """The reference's cost with its memory term as a fraction of the GPU's memory (see the module docstring)."""
    memory = memory_weight * (memory_used + memory_job) / device_memory if device_memory else 0.0
    gap = min(util_used, 1.0) + util_job - 1.0
    return memory + (over_weight * gap if gap > 0 else -gap) + count_weight * n_jobs


@register("horus")
class Horus(Policy):
    kind = "predictive"
    needs = ("util",)

    def __init__(self, lookahead: int = 5, max_jobs_per_gpu: int = 3, memory_weight: float = 1.3,
                 over_weight: float = 1.6, count_weight: float = 1.0, headroom_bytes: float = HEADROOM_BYTES):
        self.lookahead = lookahead
        self.max_jobs_per_gpu = max_jobs_per_gpu
        self.memory_weight = memory_weight
        self.over_weight = over_weight
        self.count_weight = count_weight
        self.headroom_bytes = headroom_bytes
        self._order_util = None

    def queue_key(self, job) -> tuple:
        """Predicted utilization on the reference device, then submission. A job queued before `reset` (a
        prepared round state) is keyed 0 and re-keyed by `reset`."""
        if self._order_util is None:
            return (0.0, job.submit_time, job.job_id)
        return (self._order_util(job.workload), job.submit_time, job.job_id)

    def reset(self, view) -> None:
        super().reset(view)
        self._util = view.predictions.util
        reference, devices = view.profile.reference_device, list(view.cluster.devices)
        keys: dict[str, float] = {}

        def order_util(workload: str) -> float:
            value = keys.get(workload)
            if value is None:
                try:
                    value = self._util(reference, workload)
                except KeyError:  # (a cluster without the reference device type: the mean over its types)
                    known = [self._util(d, workload) for d in devices if view.has_solo(d, workload)]
                    value = sum(known) / len(known)
                keys[workload] = value
            return value

        self._order_util = order_util
        for job in view.queue:  # (jobs queued before reset: keyed anew by their utilization)
            view.queue.rekey(job)
        self._cap = view.cluster.cap  # (capped at max_jobs_per_gpu by the view)
        self._costs: dict[tuple, float | None] = {}
        cluster = view.cluster
        self._node_first: list[int] = []
        for gpu, node in enumerate(cluster.gpu_node):
            if node == len(self._node_first):
                self._node_first.append(gpu)
        self._node_first.append(cluster.num_gpus)

    def cost(self, view, device: str, sig: tuple[str, ...], workload: str) -> float | None:
        """Cost of a `workload` job joining a GPU of `device` holding `sig` (sorted); None if it does not fit."""
        key = (device, sig, workload)
        if key in self._costs:
            return self._costs[key]
        value = None
        if view.has_solo(device, workload) and (not sig or (
                len(sig) < self._cap and memory_fits(view, device, sig, workload, self.headroom_bytes)
                and view.can_share(device, sig + (workload,)))):
            used = sum(view.memory(device, w) or 0.0 for w in sig)
            util = sum(self._util(device, w) for w in sig)
            value = self.score(used, view.memory(device, workload) or 0.0, view.device_memory(device), util,
                               self._util(device, workload), len(sig))
        self._costs[key] = value
        return value

    def score(self, memory_used: float, memory_job: float, device_memory: float | None, util_used: float,
              util_job: float, n_jobs: int) -> float:
        """The cost of a fitting GPU from its residents' summed memory and utilization (`horus_cost`)."""
        return horus_cost(memory_used, memory_job, device_memory, util_used, util_job, n_jobs, self.memory_weight,
                          self.over_weight, self.count_weight)

    def schedule(self, view) -> None:
        queue = view.queue
        while queue:
            tried: set[tuple[str, int]] = set()  # (workload, GPUs) that fit nowhere in this pass
            for job in queue.first(self.lookahead):
                key = (job.workload, job.num_gpus)
                if key in tried:
                    continue
                gpus = self._place_of(view, job)
                if gpus is not None:
                    view.place(job, gpus)
                    break
                tried.add(key)
            else:
                return

    def _place_of(self, view, job) -> tuple[int, ...] | None:
        cluster = view.cluster
        if job.num_gpus > 1 or not job.shareable:
            best = None
            for device in cluster.devices:
                if cluster.free_count[device] >= job.num_gpus:
                    cost = self.cost(view, device, (), job.workload)
                    if cost is not None and (best is None or cost < best[0]):
                        best = (cost, device)
            return None if best is None else cluster.pick_free(best[1], job.num_gpus)
        best = None  # (cost, node)
        for device in cluster.devices:
            if not view.has_solo(device, job.workload):
                continue
            if cluster.free_count[device]:
                cost = self.cost(view, device, (), job.workload)
                option = (cost, cluster.lowest_free_node(device))
                best = option if best is None or option < best else best
            workload, costs = job.workload, self._costs
            for sig, group in cluster.open_groups(device).items():
                cost = costs.get((device, sig, workload), _UNKNOWN)  # (the cache, read inline: the hot loop)
                if cost is _UNKNOWN:
                    cost = self.cost(view, device, sig, workload)
                if cost is not None and (best is None or cost <= best[0]):
                    option = (cost, cluster.gpu_node[group.first()])
                    best = option if best is None or option < best else best
        if best is None:
            return None
        residents, device_of, cap = cluster.residents, cluster.gpu_device, self._cap
        node = best[1]
        for gpu in range(self._node_first[node], self._node_first[node + 1]):
            here = residents[gpu]
            if not here:
                return (gpu,)
            if len(here) < cap and all(j.shareable for j in here) and self.cost(
                    view, device_of[gpu], cluster.signature(gpu), job.workload) is not None:
                return (gpu,)
        raise RuntimeError(f"horus: node {node} was chosen for job {job.job_id} but none of its GPUs fits it")
