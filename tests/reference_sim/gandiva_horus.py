"""REFERENCE rule of `gandiva-horus` (the Gandiva of the Horus authors' simulator), written plainly to hold
coloc.policies.gandiva_horus's indexed search to it. Not a copy of commit 1487f24 (the policy came later): the
scanning Horus of this package with Gandiva's queue and cost.

Queue by submission; only the head is tried (no backfill). A single-GPU job: the cost of every GPU that fits, the
node whose least cost is least (lowest node among ties), then the first GPU of that node that fits. Cost:
1.3 (M + m) / D + min(U, 1) + n (U: the residents' summed predicted utilization; the job's own does not enter).
A job of several GPUs: idle GPUs of the device type of least idle cost, on as few nodes as possible.
"""
from __future__ import annotations

from reference_sim.base import register
from reference_sim.horus import Horus
from reference_sim.queue import fifo_key


@register("gandiva-horus")
class GandivaHorus(Horus):
    kind = "baseline"

    def __init__(self, max_jobs_per_gpu: int = 3, memory_weight: float = 1.3, count_weight: float = 1.0,
                 headroom_bytes: float = 500 * 2 ** 20):
        super().__init__(lookahead=1, max_jobs_per_gpu=max_jobs_per_gpu, memory_weight=memory_weight,
                         count_weight=count_weight, headroom_bytes=headroom_bytes)

    def queue_key(self, job) -> tuple:
        return fifo_key(job)

    def _cost(self, view, gpu: int, job) -> float:
        cluster = view.cluster
        device = cluster.gpu_device[gpu]
        here = sorted(j.workload for j in cluster.residents[gpu])
        used = sum(view.memory(device, w) or 0.0 for w in here)
        util = sum(view.predictions.util(device, w) for w in here)
        memory_weight, _, count_weight = self.weights
        capacity = view.device_memory(device)
        mem = memory_weight * (used + (view.memory(device, job.workload) or 0.0)) / capacity if capacity else 0.0
        return mem + min(util, 1.0) + count_weight * len(here)
