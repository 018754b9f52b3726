"""The Gandiva of the Horus authors' simulator (matthewygf/GPUSchedule), Horus's own baseline: `gandiva-horus`.

Not Gandiva as its paper builds it (that is `gandiva`: pairs, introspection, unpacking), but the baseline the Horus
reference runs under that name: its scheduler is the reference's FIFO (`scheduling_algorithms['gandiva'] =
schedule_fifo`), its placement is Horus's (`placement_algorithms['gandiva'] = horus_placement`) with Gandiva's score
(`score_fn['gandiva'] = gandiva_score`, core/scheduling/horus.py), at most 3 jobs per GPU and 500 MiB left free
(infra/device.py `can_fit`).

Cost of a job j joining a GPU of device type d that holds the jobs R (n = |R| of them):

    cost = 1.3 x (M + m) / D  +  min(U, 1)  +  n

M, m, D as in `horus`: the summed declared peak memory of R, j's, the GPU's memory (unknown memory adds 0). U: the
summed predicted solo utilization of R on d, capped at 1 as the reference caps a GPU's utilization at 100%. Unlike
Horus's cost, j's own utilization does not enter and there is no penalty above 100%: Gandiva packs by how loaded the
GPU already is, Horus by how loaded it would be. The reference samples each resident's utilization from a normal
around its trace mean at every scoring; here it is the prediction Horus reads (`needs = ("util",)`), so that both
see the same information, as in the reference, where both read the trace's per-job utilization. An idle GPU costs
1.3 m / D and an occupied one of the same device type at least 1.3 m / D + 1: the idle one never costs more.

Queue: submission order, and only its head is tried (the reference's `schedule_fifo` takes the first job; when it fits
nowhere, nothing starts until it does: no backfill). Fits and placement are Horus's (`coloc.policies.horus`): the
node whose lowest-cost fitting GPU is least (ties: the lowest node), then that node's first GPU in GPU order that
fits; a job of several GPUs on idle GPUs of the device type of least idle cost, on as few nodes as possible. The search
is Horus's: one cost per (device type, resident set) from the cluster's groups and idle classes, then one node's GPUs.

Not modelled: the reference's time slicing (`time_slice_check`: while jobs wait, every running job is preempted each
time its processed time reaches a multiple of 100 steps and queued again). It is registered as a plugin
(`plugin_algorithms['gandiva']`) that no stored version of the reference's scheduler loop (core/scheduling/
schedule.py) calls, so whether the paper's runs sliced is unknown.
"""
from __future__ import annotations

from coloc.policies.base import register
from coloc.policies.horus import HEADROOM_BYTES, Horus
from coloc.sim.queue import fifo_key


def gandiva_cost(memory_used: float, memory_job: float, device_memory: float | None, util_used: float, n_jobs: int,
                 memory_weight: float = 1.3, count_weight: float = 1.0) -> float:
    """The reference's Gandiva score with its memory term as a fraction of the GPU's memory (module docstring)."""
    memory = memory_weight * (memory_used + memory_job) / device_memory if device_memory else 0.0
    return memory + min(util_used, 1.0) + count_weight * n_jobs


@register("gandiva-horus")
class GandivaHorus(Horus):
    kind = "baseline"

    def __init__(self, max_jobs_per_gpu: int = 3, memory_weight: float = 1.3, count_weight: float = 1.0,
                 headroom_bytes: float = HEADROOM_BYTES):
        super().__init__(lookahead=1, max_jobs_per_gpu=max_jobs_per_gpu, memory_weight=memory_weight,
                         count_weight=count_weight, headroom_bytes=headroom_bytes)

    def queue_key(self, job) -> tuple:
        return fifo_key(job)

    def score(self, memory_used: float, memory_job: float, device_memory: float | None, util_used: float,
              util_job: float, n_jobs: int) -> float:
        return gandiva_cost(memory_used, memory_job, device_memory, util_used, n_jobs, self.memory_weight,
                            self.count_weight)
