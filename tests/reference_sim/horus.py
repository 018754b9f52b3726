"""REFERENCE rule of Horus as its authors' simulator builds it, written plainly (every GPU scanned), to hold
coloc.policies.horus's indexed search to it.

Queue by predicted utilization on the reference device (then submission, job id); each pass takes the first
`lookahead` jobs and places the first that fits, repeated until none fits. A single-GPU job: cost of every GPU
that fits (coloc.policies.horus.horus_cost), the node whose least cost is least (lowest node among ties), then the
first GPU of that node that fits. Cost: 1.3 (M + m) / D + |min(U, 1) + u - 1| (x 1.6 above 1) + n.
A job of several GPUs: idle GPUs of the device type of least idle cost, on as
few nodes as possible. Fits: solo throughput on the device and either idle, or fewer than the cap of jobs, all
shareable, memory with more than the headroom left free, and every pair measured as fitting.
"""
from __future__ import annotations

from reference_sim.base import Policy, register


@register("horus")
class Horus(Policy):
    kind = "predictive"
    needs = ("util",)
    max_jobs_per_gpu = 3

    def __init__(self, lookahead: int = 5, max_jobs_per_gpu: int = 3, memory_weight: float = 1.3,
                 over_weight: float = 1.6, count_weight: float = 1.0, headroom_bytes: float = 500 * 2 ** 20):
        self.lookahead = lookahead
        self.max_jobs_per_gpu = max_jobs_per_gpu
        self.weights = (memory_weight, over_weight, count_weight)
        self.headroom_bytes = headroom_bytes
        self._view = None

    def queue_key(self, job) -> tuple:
        view = self._view
        if view is None:
            return (0.0, job.submit_time, job.job_id)
        try:
            u = view.predictions.util(view.profile.reference_device, job.workload)
        except KeyError:
            known = [view.predictions.util(d, job.workload) for d in view.cluster.devices
                     if view.has_solo(d, job.workload)]
            u = sum(known) / len(known)
        return (u, job.submit_time, job.job_id)

    def reset(self, view) -> None:
        super().reset(view)
        self._view = view
        for job in list(view.queue):
            view.queue.rekey(job)
        self._cap = min(view.cluster.cap, self.max_jobs_per_gpu)

    def _fits(self, view, gpu: int, job) -> bool:
        cluster = view.cluster
        device, here = cluster.gpu_device[gpu], cluster.residents[gpu]
        if not view.has_solo(device, job.workload):
            return False
        if not here:
            return True
        if len(here) >= self._cap or not job.shareable or not all(j.shareable for j in here):
            return False
        names = sorted(j.workload for j in here) + [job.workload]
        capacity = view.device_memory(device)
        needs = [view.memory(device, w) for w in names]
        if capacity is not None and all(n is not None for n in needs):
            if not capacity - sum(needs) > self.headroom_bytes:
                return False
        return view.can_share(device, names)

    def _cost(self, view, gpu: int, job) -> float:
        cluster = view.cluster
        device = cluster.gpu_device[gpu]
        sig = sorted(j.workload for j in cluster.residents[gpu])
        used = sum(view.memory(device, w) or 0.0 for w in sig)
        util = sum(view.predictions.util(device, w) for w in sig)
        memory_weight, over_weight, count_weight = self.weights
        capacity = view.device_memory(device)
        mem = memory_weight * (used + (view.memory(device, job.workload) or 0.0)) / capacity if capacity else 0.0
        over = min(util, 1.0) + view.predictions.util(device, job.workload) - 1.0
        return mem + (over_weight * over if over > 0 else -over) + count_weight * len(sig)

    def schedule(self, view) -> None:
        while True:
            for job in view.queue.first(self.lookahead):
                gpus = self._place_of(view, job)
                if gpus is not None:
                    view.place(job, gpus)
                    break
            else:
                return

    def _place_of(self, view, job):
        cluster = view.cluster
        if job.num_gpus > 1 or not job.shareable:
            best = None
            for device in cluster.devices:
                idle = [g for g in range(cluster.num_gpus) if cluster.gpu_device[g] == device
                        and not cluster.residents[g]]
                if len(idle) >= job.num_gpus and view.has_solo(device, job.workload):
                    cost = self._cost(view, idle[0], job)
                    if best is None or cost < best[0]:
                        best = (cost, device)
            return None if best is None else cluster.pick_free(best[1], job.num_gpus)
        node_cost: dict[int, float] = {}
        for gpu in range(cluster.num_gpus):
            if self._fits(view, gpu, job):
                node = cluster.gpu_node[gpu]
                cost = self._cost(view, gpu, job)
                node_cost[node] = min(cost, node_cost.get(node, cost))
        if not node_cost:
            return None
        node = min(node_cost, key=lambda n: (node_cost[n], n))
        for gpu in range(cluster.num_gpus):
            if cluster.gpu_node[gpu] == node and self._fits(view, gpu, job):
                return (gpu,)
        raise AssertionError("unreachable: the node has a GPU that fits")
